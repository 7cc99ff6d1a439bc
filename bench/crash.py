"""Kill -9 at random points while the agent writes, then reopen: is every acknowledged write there?

    python bench/crash.py [--trials 100] [--turns 30] [--embedder local|hash] [--json bench/results/crash.json]

Each trial starts `python run.py` on one memory folder, kept from trial to trial as a user's would be,
with a scripted model whose reply to message i is `remember <fact i>` then `send ack i`. The messages go
one at a time through the terminal channel. The agent is killed with SIGKILL at a random moment: most
trials inside the turn after a random number of messages (the remember, the trace append, the episode's
indexing, a dream in the background: `dreamEvery` is left at its default), the rest while it starts
(the journal replay, a repair, the resumed dream). The folder is then opened with `open_memory`, as the
agent opens it, and every write the agent had acknowledged is looked for:
- a memory is acknowledged once the `ack` printed after its `remember` is seen;
- a message (its trace record and its episode row) once the next message's `ack` is seen.
Each must be in the trace, in the memory index, and among the five nearest rows of its own text in a
vector query (Chroma's HNSW index, or the journal not yet flushed to it). This trial's writes are
checked after each kill, with a sample of the older ones, and all of them after the last trial.
"""

from __future__ import annotations

import argparse
import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, report  # noqa: E402

from mettaclaw.config import load_config  # noqa: E402
from mettaclaw.memory import open_memory  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("amber", "birch", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "iris", "juniper",
         "kelp", "lagoon", "maple", "nickel", "opal", "pepper", "quartz", "raven", "saffron", "tundra")
STARTUP_S = 60.0  # the most a start may take before the trial counts it as a failure
TURN_S = 30.0  # likewise for one turn's ack


def message(trial: int, i: int) -> str:
    return f"note {trial}-{i}: the {WORDS[(trial + i) % 20]} crate on shelf {trial * 100 + i} is sealed"


def fact(trial: int, i: int) -> str:
    return f"fact {trial}-{i}: locker {trial * 1000 + i} holds the {WORDS[(3 * trial + i) % 20]} kit"


def script(trial: int, turns: int) -> str:
    """The model's replies: `send ready` to the turn the agent starts with (its budget is granted at
    start, and no message is sent before `ready`), then one block a message (maxNewInputLoops=1: only
    a message's turn asks the model again). Sent any earlier, the first message raced that first turn:
    two messages could share a turn, and each ack then stood for the wrong one."""
    return "\n---\n".join(["send ready", *(f"remember {fact(trial, i)}\nsend ack {i}" for i in range(turns))])


@dataclass
class Ledger:
    """What the agent acknowledged, over all trials."""

    messages: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    trials: int = 0
    killed_in_turn: int = 0
    killed_at_start: int = 0
    opens_failed: list[str] = field(default_factory=list)
    lost_trace: list[str] = field(default_factory=list)
    lost_index: list[str] = field(default_factory=list)
    not_found_by_vector: list[str] = field(default_factory=list)
    agent_errors: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    checked: int = 0


def settings(folder: Path, embedder: str) -> list[str]:
    return [f"memoryDir={folder / 'memory'}", f"knowledgePriorsDir={folder / 'priors'}",
            f"embeddingprovider={embedder}", "maxNewInputLoops=1", "maxWakeLoops=0", "sleepInterval=0.02"]


def read_lines(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def wait_for(lines: queue.Queue, prefix: str, limit: float) -> bool:
    """Wait for an output line that is `prefix` or starts with it and a space or a dot; False if the
    agent ended or took too long."""
    deadline = time.monotonic() + limit
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            return False
        if line is None:
            return False
        if line == prefix or line.startswith((prefix + " ", prefix + ".")):
            return True
    return False


def run_agent(folder: Path, trial: int, turns: int, embedder: str, rng: random.Random, ledger: Ledger,
              out: Outcome) -> None:
    """One agent run, killed at a random moment; what it acknowledged goes into the ledger."""
    script_path = folder / f"script-{trial}.txt"
    script_path.write_text(script(trial, turns), encoding="utf-8")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    agent = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "provider=scripted", f"scriptFile={script_path}",
                              *settings(folder, embedder)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=read_lines, args=(agent.stdout, lines), daemon=True).start()
    errors: list[str] = []
    threading.Thread(target=lambda: errors.extend(agent.stderr), daemon=True).start()
    try:
        if rng.random() < 0.15:  # killed while it starts: replaying the journal, repairing, resuming a dream
            time.sleep(rng.uniform(0.0, 6.0))
            out.killed_at_start += 1
            return
        if not wait_for(lines, "agent> ready", STARTUP_S):
            out.agent_errors.append(f"trial {trial}: the agent did not start: {''.join(errors)[-500:]}")
            return
        stop_after = rng.randrange(1, turns)
        for i in range(stop_after + 1):
            agent.stdin.write(message(trial, i) + "\n")
            agent.stdin.flush()
            if i == stop_after:
                time.sleep(rng.uniform(0.0, 0.3))  # somewhere inside this turn (or just after it)
                out.killed_in_turn += 1
                return
            if not wait_for(lines, f"agent> ack {i}", TURN_S):
                out.agent_errors.append(f"trial {trial}: no ack for message {i}: {''.join(errors)[-500:]}")
                return
            ledger.facts.append(fact(trial, i))
            if i:
                ledger.messages.append(message(trial, i - 1))
    finally:
        os.killpg(agent.pid, signal.SIGKILL)
        agent.wait()


def check(memory, messages: list[str], facts: list[str], out: Outcome) -> None:
    """Each acknowledged message in the trace and the index, each one and each fact found by its vector."""
    said = {episode.message: episode.id for episode in memory.trace}
    for text in messages:
        out.checked += 1
        episode_id = next((i for t, i in said.items() if text in t), None)
        if episode_id is None:
            out.lost_trace.append(text)
        elif memory.index.get(episode_id) is None:
            out.lost_index.append(text)
        elif not found_by_vector(memory, text, episode_id):
            out.not_found_by_vector.append(f"{text} ({episode_id}: {why_not_found(memory, text, episode_id)})")
    for text in facts:
        out.checked += 1
        row = next((m for m in memory.index.query(text, limit=5, mode="bm25") if text in m.text), None)
        if row is None:
            out.lost_index.append(text)
        elif not found_by_vector(memory, text, row.id):
            out.not_found_by_vector.append(f"{text} ({row.id}: {why_not_found(memory, text, row.id)})")


def found_by_vector(memory, text: str, row_id: str) -> bool:
    return row_id in {m.id for m in memory.index.query(text, limit=5, mode="vector")}


def why_not_found(memory, text: str, row_id: str) -> str:
    """The row's own cosine with its text against the fifth nearest row's: a row far below the fifth
    was pushed out by its neighbours; one above it was missed by the index's search."""
    vector = memory.embedder.embed([text])[0]
    own = memory.index.similarity(vector, [row_id]).get(row_id, float("nan"))
    nearest = memory.index.query(text, limit=5, mode="vector")
    fifth = nearest[-1].score if nearest else float("nan")
    return f"own cosine {own:.3f}, fifth nearest {fifth:.3f}"


def reopen_and_check(folder: Path, embedder_name: str, embedder, ledger: Ledger, new: tuple[int, int],
                     rng: random.Random, out: Outcome, everything: bool = False) -> None:
    try:
        memory = open_memory(load_config(settings(folder, embedder_name)), embedder=embedder, dream=False)
    except Exception as err:  # noqa: BLE001 - what a failed open says is the finding
        out.opens_failed.append(f"{type(err).__name__}: {err}")
        return
    try:
        out.notices.extend(getattr(memory.index, "notices", ()))
        if everything:
            messages, facts = ledger.messages, ledger.facts
        else:
            old_m, old_f = ledger.messages[: new[0]], ledger.facts[: new[1]]
            messages = ledger.messages[new[0]:] + rng.sample(old_m, min(10, len(old_m)))
            facts = ledger.facts[new[1]:] + rng.sample(old_f, min(10, len(old_f)))
        check(memory, messages, facts, out)
    finally:
        memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--turns", type=int, default=30, help="the most messages a trial sends before its kill")
    parser.add_argument("--embedder", choices=("local", "hash"), default="local")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", default=None, help="use (and keep) this folder instead of a temporary one")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    from rich.progress import track

    from mettaclaw.memory.stores.embedders import make_embedder

    rng = random.Random(args.seed)
    ledger, out = Ledger(), Outcome()
    started, load_before = time.monotonic(), load_average()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        embedder = make_embedder(load_config(settings(folder, args.embedder)))
        for trial in track(range(args.trials), description="kill -9 trials"):
            new = (len(ledger.messages), len(ledger.facts))
            run_agent(folder, trial, args.turns, args.embedder, rng, ledger, out)
            out.trials += 1
            reopen_and_check(folder, args.embedder, embedder, ledger, new, rng, out)
        checked_before = out.checked
        reopen_and_check(folder, args.embedder, embedder, ledger, (0, 0), rng, out, everything=True)
    lost = len(out.lost_trace) + len(out.lost_index) + len(out.not_found_by_vector)
    rows = [("trials", out.trials), ("killed inside a turn", out.killed_in_turn),
            ("killed while starting", out.killed_at_start),
            ("acknowledged messages", len(ledger.messages)), ("acknowledged memories", len(ledger.facts)),
            ("checks (after each trial, then all)", f"{checked_before} + {out.checked - checked_before}"),
            ("opens that failed", len(out.opens_failed)), ("lost from the trace", len(out.lost_trace)),
            ("lost from the index", len(out.lost_index)), ("not found by their vector", len(out.not_found_by_vector)),
            ("agent runs that failed before the kill", len(out.agent_errors)),
            ("warnings at open", len(out.notices)), ("minutes", (time.monotonic() - started) / 60),
            ("load average before / after", f"{load_before} / {load_average()}")]
    for name, found in (("failed opens", out.opens_failed), ("lost from the trace", out.lost_trace),
                        ("lost from the index", out.lost_index), ("not found by vector", out.not_found_by_vector),
                        ("agent errors", out.agent_errors), ("warnings", out.notices)):
        for line in found[:5]:
            print(f"{name}: {line}")
    report(f"kill -9 during writes ({args.embedder} embedder)", rows, args.json,
           {"args": vars(args), "lost": lost, **{k: v for k, v in vars(out).items()},
            "acknowledged_messages": len(ledger.messages), "acknowledged_memories": len(ledger.facts)})
    sys.exit(1 if lost or out.opens_failed else 0)


if __name__ == "__main__":
    main()
