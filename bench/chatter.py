"""Facts among chatter: recall of what people said in messy group chat, through the live agent.

The conversations are the project's own (bench/data/chatter.json, written by bench/make_chatter.py): two
parts, `tune` and `held_out`, each about 500 lines among five or six people on two channels over six
days, with greetings, acks, plans, small talk and pasted paragraphs. Each part holds 18 facts, each
stated once and asked once in other words; most have near misses (statements that share the question's
words but not its answer), six are revised later (the question asks the current value), and some are
asked by someone in the chat before they are answered.

Each part is one agent, as in bench/locomo.py: `open_memory` with the default configuration (real
MiniLM, embedded Chroma, the dreamer on its default triggers) and the agent's MeTTa loop with a model
scripted to do nothing. The lines arrive through a channel from their speakers, `--pace K` of them a
turn (a slow model or a busy room gathers several messages into one turn), at their own times (an
injected clock). Each question is then asked through the `query` skill and scored from the ids it shows,
mapped to the lines they cite: a hit counts for a line only when its text shows the line (for a long
line, the sentence that holds the fact). Plain BM25 and plain vector rankings over the same episode rows
run in the same pass.

Per part and pace: facts first (the first hit shows the answer) and own first (the first hit shows the
answer's line and nothing else), R@1/R@3/R@10, revisions ranked above their
original, questions where a near miss ranks above the answer, questions with an ack or greeting or
someone's question among the first 3 hits (a hit that shows nothing else), and the tokens of the first 3.

    python bench/chatter.py [--part tune|held_out] [--pace K ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _common import load_average, median, percentile  # noqa: E402
from _recall import (  # noqa: E402
    SessionClock,
    add_settings_option,
    count_tokens,
    recall_settings,
    scored,
    shown_hits,
    shows,
)

from mettaclaw.channels import QueueChannel  # noqa: E402
from mettaclaw.config import load_config  # noqa: E402
from mettaclaw.llm import Scripted  # noqa: E402
from mettaclaw.memory import open_memory  # noqa: E402
from mettaclaw.memory.core.settings import DEFAULT_SETTINGS, RecallSettings  # noqa: E402
from mettaclaw.messages import Message  # noqa: E402
from mettaclaw.runtime import Agent  # noqa: E402

DATA = ROOT / "bench" / "data" / "chatter.json"
PARTS = ("tune", "held_out")
KS = (1, 3, 10)
FIRST = 3  # the hits a reader surely reads: noise and tokens are counted among these
LIMIT = 20  # hits a plain ranking returns
NOISE = {"acks": ("ack", "greeting"), "questions": ("question", "asked")}  # figure -> line kinds that are no answer
MODES = ("agent", "bm25", "vector")

Ranked = list[tuple[str, list[str]]]  # (text a hit shows, the lines it shows), best first


def load(path: Path = DATA) -> dict[str, dict[str, Any]]:
    """The parts by name: their lines in time order and their questions."""
    return json.loads(path.read_text(encoding="utf-8"))


def evidence_text(line: dict[str, Any]) -> str:
    """What a hit must show to show this line: the sentence that holds a long line's fact, or the line as
    the agent records it (`who: text`)."""
    return line.get("span") or f"{line['speaker']}: {line['text']}"


def batches(lines: list[dict[str, Any]], pace: int) -> list[list[dict[str, Any]]]:
    """The lines as the turns that gather them: `pace` consecutive lines a turn."""
    if pace < 1:
        raise ValueError(f"a turn gathers at least one message, not {pace}")
    return [lines[i : i + pace] for i in range(0, len(lines), pace)]


def first_rank(ranked: Ranked, ids: list[str]) -> int | None:
    """The 1-based rank of the first hit that shows any of `ids`, or None."""
    want = set(ids)
    return next((n for n, (_, lines) in enumerate(ranked, 1) if want & set(lines)), None)


def judged(ranked: Ranked, question: dict[str, Any], kind_of: dict[str, str]) -> dict[str, Any]:
    """One question's figures from a ranking: recall of its answer, where its answer, original and near
    misses rank, whether the first hit is the answer's own line (not a turn or a dream record that also
    shows other lines: at pace K a turn's record shows all K messages), the noise among the first hits
    (a hit that shows only lines of no-answer kinds), and the tokens of the first hits."""
    answer = first_rank(ranked, question["answer"])
    original = first_rank(ranked, question["original"]) if question["original"] else None
    near = first_rank(ranked, question["near_misses"]) if question["near_misses"] else None
    out: dict[str, Any] = {**scored(ranked, set(question["answer"]), KS), "answer_rank": answer,
                           "original_rank": original, "near_rank": near, "first": answer == 1,
                           "own_first": bool(ranked) and set(ranked[0][1]) == set(question["answer"]),
                           f"tokens@{FIRST}": sum(count_tokens(text) for text, _ in ranked[:FIRST])}
    out["revision_above"] = (answer is not None and (original is None or answer < original)) if question["original"] else None
    out["near_above"] = (near is not None and (answer is None or near < answer)) if question["near_misses"] else None
    for figure, kinds in NOISE.items():
        out[f"{figure}@{FIRST}"] = any(lines and all(kind_of[line] in kinds for line in lines)
                                       for _, lines in ranked[:FIRST])
    return out


def summarise(questions: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """Counts and means over a run's questions for one ranking."""
    figures = [q[mode] for q in questions]
    revised = [f["revision_above"] for f in figures if f["revision_above"] is not None]
    near = [f["near_above"] for f in figures if f["near_above"] is not None]
    out: dict[str, Any] = {"questions": len(figures), "first": sum(f["first"] for f in figures),
                           "own_first": sum(f["own_first"] for f in figures),
                           "revisions": len(revised), "revision_above": sum(revised),
                           "with_near_misses": len(near), "near_above": sum(near)}
    for k in KS:
        out[f"R@{k}"] = sum(f[f"R@{k}"] for f in figures) / len(figures)
    out[f"tokens@{FIRST}"] = sum(f[f"tokens@{FIRST}"] for f in figures) / len(figures)
    for figure in NOISE:
        out[f"{figure}@{FIRST}"] = sum(f[f"{figure}@{FIRST}"] for f in figures)
    ms = [q[f"{mode}_ms"] for q in questions]
    out["query_p50_ms"], out["query_p95_ms"] = median(ms), percentile(ms, 95)
    return out


def run_part(name: str, part: dict[str, Any], pace: int, embedder: Any, folder: Path, bar: Any,
             settings: RecallSettings = DEFAULT_SETTINGS) -> dict[str, Any]:
    """One agent hears the part's lines, `pace` a turn, then is asked its questions."""
    config = load_config([f"memoryDir={folder}", "provider=scripted"], env={})
    clock = SessionClock()
    memory = open_memory(config, embedder=embedder, clock=clock, settings=settings)
    channel = QueueChannel(name=part["channels"][0])
    agent = Agent(config, Scripted([]), channel, memory, clock=clock)
    lines_of: dict[str, list[str]] = {}  # episode id -> the lines it records
    turns = batches(part["lines"], pace)
    task = bar.add_task(f"{name} pace {pace}: turns", total=len(turns))
    start = time.perf_counter()
    try:
        for batch in turns:
            clock.now = datetime.fromisoformat(batch[-1]["time"]).timestamp()
            memory.dreamer.tick()  # a dream the schedule made due since the last turn
            memory.dreamer.wait()  # has run by the time the next messages arrive, as it would live
            for line in batch:
                channel.put(Message(line["text"], line["speaker"], line["channel"]))
            ids = agent.turn().message_ids
            if len(ids) != len(batch):
                raise RuntimeError(f"a turn of {len(batch)} messages named {len(ids)} message episodes: {ids}")
            for episode, line in zip(ids, batch, strict=True):
                lines_of.setdefault(episode, []).append(line["id"])
            memory.dreamer.wait()
            bar.advance(task)
        ingest_s = time.perf_counter() - start
        bar.update(task, visible=False)
        questions = ask(name, part, agent, memory, lines_of, bar)
        return {"part": name, "pace": pace, "lines": len(part["lines"]), "turns": len(turns), "ingest_s": ingest_s,
                "ingest_ms_per_message": 1000 * ingest_s / len(part["lines"]), "load_average": load_average(),
                "dreams": memory.dreamer.state.dreams, "semantic_records": len(memory.semantic),
                "summary": {mode: summarise(questions, mode) for mode in MODES}, "questions": questions}
    finally:
        agent.close()
        memory.close()


def ask(name: str, part: dict[str, Any], agent: Agent, memory: Any, lines_of: dict[str, list[str]],
        bar: Any) -> list[dict[str, Any]]:
    """Each question through the `query` skill, and the plain BM25 and vector rankings beside it."""
    texts = {line["id"]: evidence_text(line) for line in part["lines"]}
    kind_of = {line["id"]: line["kind"] for line in part["lines"]}

    def shown_lines(text: str, episodes: list[str]) -> list[str]:
        return [line for e in episodes for line in lines_of.get(e, []) if shows(text, texts[line])]

    out = []
    task = bar.add_task(f"{name}: questions", total=len(part["questions"]))
    for q in part["questions"]:
        entry: dict[str, Any] = {"id": q["id"], "question": q["text"], "answer": q["answer"]}
        rankings: dict[str, Callable[[], Ranked]] = {
            "agent": lambda q=q: [(text, shown_lines(text, memory.cites(record)))
                                  for record, text in shown_hits(agent.use_skill("query", q["text"]))],
            **{mode: lambda q=q, mode=mode: [(m.text, shown_lines(m.text, [m.id]))
                                             for m in memory.index.query(q["text"], limit=LIMIT, mode=mode, kind="episode")]
               for mode in ("bm25", "vector")}}
        for mode, rank in rankings.items():
            memory.embedder.forget(q["text"])  # every timed query pays for its own embedding
            t0 = time.perf_counter()
            ranked = rank()
            entry[f"{mode}_ms"] = 1000 * (time.perf_counter() - t0)
            if mode == "agent":
                memory.apply_touches()  # as the end of the turn that asked it would
            entry[mode] = judged(ranked, q, kind_of)
            entry[f"{mode}_shown"] = [[text, lines] for text, lines in ranked]
        out.append(entry)
        bar.advance(task)
    bar.update(task, visible=False)
    return out


def print_table(runs: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"facts among chatter (first {FIRST} hits for noise and tokens)")
    for column in ("part", "pace", "ranking", "first", "own first", "R@1", "R@3", "R@10", "revision>orig", "near>answer",
                   f"acks@{FIRST}", f"questions@{FIRST}", f"tokens@{FIRST}", "query p50/p95 ms"):
        table.add_column(column, justify="left" if column in ("part", "ranking") else "right")
    for run in runs:
        for mode in MODES:
            s = run["summary"][mode]
            table.add_row(run["part"], str(run["pace"]), mode, f"{s['first']}/{s['questions']}",
                          f"{s['own_first']}/{s['questions']}",
                          *(f"{s[f'R@{k}']:.3f}" for k in KS), f"{s['revision_above']}/{s['revisions']}",
                          f"{s['near_above']}/{s['with_near_misses']}", str(s[f"acks@{FIRST}"]),
                          str(s[f"questions@{FIRST}"]), f"{s[f'tokens@{FIRST}']:.0f}",
                          f"{s['query_p50_ms']:.0f}/{s['query_p95_ms']:.0f}")
    Console(width=200).print(table)


def print_misses(run: dict[str, Any], part: dict[str, Any], limit: int = 5) -> None:
    """Questions whose first agent hit does not show the answer: what came first."""
    kind_of = {line["id"]: line["kind"] for line in part["lines"]}
    for q in [q for q in run["questions"] if not q["agent"]["first"]][:limit]:
        text, lines = q["agent_shown"][0] if q["agent_shown"] else ("(nothing)", [])
        kinds = ",".join(sorted({kind_of[line] for line in lines})) or "shows no line"
        print(f"  {q['id']} {q['question']!r}: answer at {q['agent']['answer_rank']}; first [{kinds}] {text[:150]!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--part", choices=PARTS, action="append", help="only this part (default: both)")
    parser.add_argument("--pace", type=int, action="append", help="messages a turn (default: 1 and 5)")
    parser.add_argument("--json", type=Path, help="write the figures and every question's rankings here")
    add_settings_option(parser)
    args = parser.parse_args(argv)
    settings, _ = recall_settings(parser, args.set)
    if any(p < 1 for p in args.pace or ()):
        parser.error("--pace is at least 1")
    from rich.progress import Progress

    from mettaclaw.memory.stores.embedders import SentenceTransformerEmbedder

    data = load(args.data)
    parts, paces = args.part or list(PARTS), args.pace or [1, 5]
    embedder = SentenceTransformerEmbedder()
    runs = []
    begin = time.perf_counter()
    with Progress(transient=True) as bar, tempfile.TemporaryDirectory(prefix="chatter-live-") as tmp:
        for name in parts:
            for pace in paces:
                runs.append(run_part(name, data[name], pace, embedder, Path(tmp) / f"{name}-{pace}", bar, settings))
    print(f"{len(runs)} runs in {time.perf_counter() - begin:.0f} s; load average {load_average()}")
    for run in runs:
        print(f"  {run['part']} pace {run['pace']}: {run['lines']} messages in {run['turns']} turns, "
              f"{run['ingest_ms_per_message']:.0f} ms a message (dreams included; load {run['load_average']}), "
              f"{run['dreams']} dreams, {run['semantic_records']} semantic records")
    print_table(runs)
    for run in runs:
        print(f"{run['part']} pace {run['pace']}: first agent hit not the answer")
        print_misses(run, data[run["part"]])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"data": str(args.data), "load_average": load_average(), "runs": runs},
                                        indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
