"""Fuzzed model replies through whole turns: crashes, hangs over 1 s, and the slowest reply.

    python bench/fuzz_turns.py [--replies 100000] [--seed 1] [--json PATH]

Each reply is built from hostile pieces (unbalanced parentheses and quotes, MeTTa builtins as skill
names, lone surrogates, NUL, huge arguments, fences) and answered by one agent turn on `open_memory`
(hash embedder, in-memory stores, as the tests run it): parser, skills, trace and episode index. A
crash is a turn that raised or an agent that stopped answering; a hang is a turn over 1 s. The shell,
metta and file skills run for real inside a temporary workspace.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, median, percentile, report  # noqa: E402

from mettaclaw.channels import QueueChannel  # noqa: E402
from mettaclaw.config import load_config  # noqa: E402
from mettaclaw.llm import Scripted  # noqa: E402
from mettaclaw.memory import open_memory  # noqa: E402

PIECES = ["(", ")", '"', "```", "\\", "-", "send", "pin", "remember", "query", "write-file", "read-file", "metta",
          "Error", "Empty", "if", "let", "superpose", "$x", "!", "(import! &self os)", "(py-atom os.system)",
          "\n", " ", "é", "\x00", "\ud800", "\udcff", "(((", ")))", "((send \"a\") (pin", "``` bash", "&self", ";",
          "\t", "../../etc/passwd", "a/" * 50, "x" * 300, "(= (turn) 1)", "1e308", "\u2028", "😀"]


def reply(rng: random.Random) -> str:
    n = rng.randint(1, 40)
    return "".join(rng.choice(PIECES) if rng.random() < 0.8 else chr(rng.randint(1, 0x10FFFF)) for _ in range(n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    import logging

    from rich.progress import track

    from mettaclaw.runtime import Agent

    logging.getLogger("mettaclaw").setLevel(logging.ERROR)  # each replaced surrogate is logged: not here

    rng = random.Random(args.seed)
    replies = [reply(rng) for _ in range(args.replies)]
    crashes: list[str] = []
    hangs: list[tuple[float, str]] = []
    times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "priors").mkdir()
        config = load_config([f"memoryDir={tmp}/memory", f"knowledgePriorsDir={tmp}/priors", "embeddingprovider=hash",
                              "chromaMode=memory", "sleepInterval=0", "dreamInterval=0", "maxNewInputLoops=1000000",
                              "shellTimeout=1", "mettaTimeout=1"], env={})
        memory = open_memory(config)
        llm = Scripted(replies)
        llm.keep_prompts = False
        channel = QueueChannel(["go"])
        agent = Agent(config, llm, channel, memory)
        try:
            for i in track(range(args.replies), description="fuzzed turns"):
                start = time.perf_counter()
                try:
                    agent.turn()
                except Exception as err:  # noqa: BLE001 - the figure counts them
                    crashes.append(f"{type(err).__name__}: {err} <- {replies[i]!r}"[:500])
                took = time.perf_counter() - start
                times.append(took)
                if took > 1.0:  # with what the dreamer was doing, and the turn's own steps (the turn log)
                    steps = agent.turn_state
                    hangs.append((took, i, f"dreamer {memory.dreamer.progress[0]}, model {steps.model_ms or 0:.0f} ms, "
                                  f"commands {[(c['skill'], c['ms']) for c in steps.timings]}", repr(replies[i][:200])))
                channel.sent.clear()
                if i % 200 == 0:
                    channel.put(f"message {i}")  # keep the budget topped up, as a talking user does
            alive = agent.use_skill("query", "message")
        finally:
            agent.close()
            memory.close()
    slowest = max(range(len(times)), key=times.__getitem__)
    payload = {"replies": args.replies, "seed": args.seed, "crashes": len(crashes), "hangs_over_1s": len(hangs),
               "turn_ms_p50": 1000 * median(times), "turn_ms_p95": 1000 * percentile(times, 95),
               "turn_ms_p50_by_tenth": [round(1000 * median(times[k * len(times) // 10:(k + 1) * len(times) // 10] or [0]), 1)
                                        for k in range(10)],
               "slowest_s": times[slowest], "slowest_reply": repr(replies[slowest][:300]), "agent_answers_after": bool(alive),
               "crash_examples": crashes[:20], "hang_examples": sorted(hangs, reverse=True)[:20], "load": load_average()}
    report("fuzzed replies through whole turns", [(k, v) for k, v in payload.items() if not k.endswith("examples")],
           args.json, payload)


if __name__ == "__main__":
    main()
