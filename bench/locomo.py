"""LoCoMo evidence recall through the live agent, as a user runs it.

Each conversation is one agent: `open_memory` with the default configuration (real MiniLM, embedded
Chroma, the dreamer on its default triggers) and the agent's MeTTa loop with a model scripted to do
nothing. Each turn arrives as a message through a channel, from its speaker, at its session time (an
injected clock), so it is an episode the moment the turn ends; dreams run when the default settings
trigger them. Each question is then asked through the `query` skill, and scored from the record ids
the skill shows, mapped to the turns they cite (a derived record counts only for the cited turns whose
words the text it is shown with shows), and its tokens are counted on that text: what the model
reads. Plain BM25 and plain vector rankings over the same episode rows run in the same pass, for
ratios. Nothing looks at a question's answer or evidence before scoring.

    python bench/locomo.py [--convs 0,1 | --skip-convs 2] [--together] [--json PATH] [--set NAME=VALUE ...]
                           [--store memory] [--baseline EARLIER.json] [--pace 1,5]

`--pace K` hands the agent K messages a turn (what arrives while a real model is still thinking; default
1); `--pace 1,5` runs both, one after the other, and prints each with the change in R@10 between them.

`--together` gives the chosen conversations to one agent, each on its own channel, their turns in time
order: an agent that talks with several people, where a name is in a few of the turns rather than half
of them and one pair's themes must compete with another's. Each conversation's questions are then
asked of that one memory.

`--set` changes a recall setting (memory.core.settings.RecallSettings; `--set stages=-spread` leaves a
recall stage out, `--set stages=candidates,fuse,floor` runs only those) and `--store memory` uses
exact in-process vectors instead of embedded Chroma: both are for tuning runs, and the output says so.

Each R@10 comes with a 95% bootstrap interval over the questions (`ci95=lo-hi`): on 43 multi-hop
questions it is about +-0.1 wide, so a change smaller than that is not shown to be one. `--baseline`
compares this run with an earlier `--json` file question by question (a paired bootstrap of the
R@10 differences), which is the fair test of a tuning change.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import _recall  # noqa: E402
from _common import load_average, median, percentile  # noqa: E402
from _recall import (  # noqa: E402
    KS,
    SessionClock,
    add_settings_option,
    changed_evidence,
    print_recall,
    questions_of,
    recall_settings,
    recall_summary,
    scored,
    shown_hits,
    shows,
)

from mettaclaw.channels import QueueChannel  # noqa: E402
from mettaclaw.config import load_config  # noqa: E402
from mettaclaw.llm import Scripted  # noqa: E402
from mettaclaw.memory import open_memory  # noqa: E402
from mettaclaw.memory.core.settings import RecallSettings  # noqa: E402
from mettaclaw.messages import Message  # noqa: E402
from mettaclaw.runtime import Agent  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def session_time(raw: str) -> float:
    """'1:56 pm on 8 May, 2023' -> seconds (local time, as the agent's clock reads)."""
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").timestamp()


def load(path: Path) -> list[dict]:
    """Conversations: their turns in order (speaker, text with the shared photo's caption, time) and
    their scorable questions (evidence ids normalised; ids that name no turn dropped)."""
    convs = []
    for n, sample in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        conv = sample["conversation"]
        sessions = sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        turns = []
        for key in sessions:
            start = session_time(conv[f"{key}_date_time"])
            for idx, turn in enumerate(conv[key]):
                caption = turn.get("blip_caption")
                text = turn["text"] + (f" [shares a photo of {caption}]" if caption else "")
                turns.append({"dia_id": turn["dia_id"], "speaker": turn["speaker"], "text": text,
                              "time": start + 30 * idx})
        known = {t["dia_id"] for t in turns}
        questions = []
        for qa in sample["qa"]:
            ids = {f"D{s}:{t}" for e in qa.get("evidence", []) for s, t in re.findall(r"D:?(\d+):(\d+)", str(e))}
            evidence = sorted(ids & known)
            if evidence:
                questions.append({"question": qa["question"], "evidence": evidence, "category": qa["category"]})
        convs.append({"source": f"locomo:{sample.get('sample_id', n)}", "turns": turns, "questions": questions})
    return convs


def together(convs: list[dict[str, Any]], positions: list[int]) -> dict[str, Any]:
    """The conversations at `positions` as one: every turn on its conversation's channel, all in time
    order, turn ids and evidence prefixed with the conversation's position (`0/D1:3`)."""
    turns = sorted(({**t, "dia_id": f"{n}/{t['dia_id']}", "channel": convs[n]["source"]}
                    for n in positions for t in convs[n]["turns"]), key=lambda t: t["time"])
    questions = [{**q, "evidence": [f"{n}/{e}" for e in q["evidence"]]} for n in positions for q in convs[n]["questions"]]
    return {"source": "together:" + "+".join(convs[n]["source"] for n in positions), "turns": turns, "questions": questions}


def paced(turns: list[dict[str, Any]], pace: int) -> list[list[dict[str, Any]]]:
    """The turns in groups of `pace` consecutive messages of one channel: what arrives while the model is
    still thinking, handed to the agent as one turn (a group never spans two channels)."""
    groups: list[list[dict[str, Any]]] = []
    for turn in turns:
        if groups and len(groups[-1]) < pace and groups[-1][-1].get("channel") == turn.get("channel"):
            groups[-1].append(turn)
        else:
            groups.append([turn])
    return groups


def run_conversation(conv: dict, args: argparse.Namespace, embedder: Any, settings: RecallSettings,
                     folder: Path, bar: Any, pace: int = 1) -> dict[str, Any]:
    config = load_config([f"memoryDir={folder}", "provider=scripted", f"chromaMode={args.store}"], env={})
    clock = SessionClock()
    memory = open_memory(config, embedder=embedder, clock=clock, settings=settings)
    channel = QueueChannel(name=conv["source"])
    agent = Agent(config, Scripted([]), channel, memory, clock=clock)
    turn_of: dict[str, str] = {}
    text_of: dict[str, str] = {}
    turn_ms: list[float] = []
    task = bar.add_task(f"{conv['source']}: turns", total=len(conv["turns"]))
    start = time.perf_counter()
    try:
        for group in paced(conv["turns"], pace):
            clock.now = group[-1]["time"]  # the turn starts when its last message has arrived
            memory.dreamer.tick()  # a dream the schedule made due in the hours between sessions
            memory.dreamer.wait()  # has run by the time the next message arrives, as it would live
            for turn in group:
                channel.put(Message(turn["text"], turn["speaker"], turn.get("channel", conv["source"])))
            t0 = time.perf_counter()
            outcome = agent.turn()
            turn_ms.append(1000 * (time.perf_counter() - t0))
            if len(outcome.message_ids) != len(group):
                raise RuntimeError(f"a turn of {len(group)} messages recorded {len(outcome.message_ids)} episodes")
            for turn, episode in zip(group, outcome.message_ids, strict=True):
                turn_of[episode] = turn["dia_id"]
                text_of[turn["dia_id"]] = f"{turn['speaker']}: {turn['text']}"
            memory.dreamer.wait()  # a person types slower than a dream of 50 episodes runs
            bar.advance(task, len(group))
        ingest_s = time.perf_counter() - start
        report = memory.dreamer.last_report
        bar.update(task, visible=False)
        return {"source": conv["source"], "pace": pace, "turns": len(conv["turns"]), "ingest_s": ingest_s,
                "turn_ms_p50": median(turn_ms), "turn_ms_p95": percentile(turn_ms, 95),
                "dreams": memory.dreamer.state.dreams, "last_dream": report.counts() if report else None,
                "semantic_records": len(memory.semantic),
                "questions": ask(conv, agent, memory, turn_of, text_of, bar)}
    finally:
        agent.close()
        memory.close()


def ask(conv: dict, agent: Agent, memory: Any, turn_of: dict[str, str], text_of: dict[str, str], bar: Any) -> list[dict]:
    """Each question through the `query` skill, and the plain BM25 and vector rankings beside it."""
    out = []
    task = bar.add_task(f"{conv['source']}: questions", total=len(conv["questions"]))
    for qa in conv["questions"]:
        memory.embedder.forget(qa["question"])  # every timed query pays for its own embedding
        t0 = time.perf_counter()
        shown = agent.use_skill("query", qa["question"])
        agent_ms = 1000 * (time.perf_counter() - t0)
        memory.apply_touches()  # as the end of the turn that asked it would: the next question ranks with them
        ranked = []
        for record_id, text in shown_hits(shown):
            turns = [turn_of[e] for e in memory.cites(record_id) if e in turn_of]
            ranked.append((text, [t for t in turns if shows(text, text_of[t])]))
        entry = {"question": qa["question"], "category": qa["category"], "evidence": qa["evidence"],
                 "agent_ms": agent_ms, "agent": scored(ranked, set(qa["evidence"])),
                 "shown": [[t, turns] for t, turns in ranked]}
        for mode in ("bm25", "vector"):
            memory.embedder.forget(qa["question"])
            t0 = time.perf_counter()
            plain = memory.index.query(qa["question"], limit=max(KS), mode=mode, kind="episode")
            entry[f"{mode}_ms"] = 1000 * (time.perf_counter() - t0)
            entry[mode] = scored([(m.text, [turn_of[m.id]] if m.id in turn_of else []) for m in plain],
                                 set(qa["evidence"]))
        out.append(entry)
        bar.advance(task)
    bar.update(task, visible=False)
    return out


def category(q: dict[str, Any]) -> str:
    return CATEGORIES.get(q["category"], str(q["category"]))


def paired(current: list[dict], earlier: list[dict]) -> dict[str, tuple[int, float, float, float]]:
    """Per category: (questions in both runs, mean R@10 change, its 95% interval) of this run over an
    earlier one, matched by conversation and question."""
    return _recall.paired(current, earlier, category)


def summarise(convs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean recall by category per ranking, latency percentiles, ingest per message (a LoCoMo turn is one
    message; at a pace above 1 an agent turn holds several)."""
    out = recall_summary(questions_of(convs), category)
    out["ingest_ms_per_message"] = 1000 * sum(c["ingest_s"] for c in convs) / sum(c["turns"] for c in convs)
    out["turn_ms_p50_median"] = median([c["turn_ms_p50"] for c in convs])
    return out


def print_lines(summary: dict[str, Any], label: str) -> None:
    """`MODE CATEGORY R@5=… R@10=… R@20=…` and `MODE all … tokens@10=…`, then latency and ratios."""
    print_recall(summary, label, CATEGORIES.values())
    print(f"ingest {summary['ingest_ms_per_message']:.1f} ms per message (dreams included); agent turn p50 "
          f"{summary['turn_ms_p50_median']:.1f} ms; agent query p95 / vector query p95 = "
          f"{summary['agent_p95_over_vector_p95']:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "locomo-dev.json")
    parser.add_argument("--json", type=Path, help="write the figures (and every question's shown turns) here")
    parser.add_argument("--convs", help="only these conversations, by position (e.g. 0,1)")
    parser.add_argument("--skip-convs", type=int, default=0, help="leave out the first N conversations")
    parser.add_argument("--limit-convs", type=int, help="only the first N conversations (after --skip-convs)")
    parser.add_argument("--together", action="store_true",
                        help="the chosen conversations in one memory, each on its own channel, in time order")
    add_settings_option(parser)
    parser.add_argument("--baseline", type=Path, help="an earlier --json file: R@10 changes question by question")
    parser.add_argument("--pace", default="1",
                        help="messages a turn, or several paces to run one after another (e.g. 1,5; default 1)")
    parser.add_argument("--store", choices=["embedded", "memory"], default="embedded",
                        help="chromaMode (default embedded, as shipped; memory: exact in-process vectors)")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"no data file at {args.data}")
    earlier = None
    if args.baseline:
        try:
            earlier = questions_of(json.loads(args.baseline.read_text())["conversations"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            parser.error(f"--baseline {args.baseline} is not a file this benchmark wrote with --json: {exc}")
    from rich.progress import Progress

    from mettaclaw.memory.stores.embedders import SentenceTransformerEmbedder

    convs = load(args.data)
    chosen = [int(c) for c in args.convs.split(",")] if args.convs else list(range(len(convs)))[args.skip_convs:]
    chosen = chosen[: args.limit_convs]
    runs = [together(convs, chosen)] if args.together else [convs[n] for n in chosen]
    settings, overrides = recall_settings(parser, args.set)
    label = "live" + (" together" if args.together else "") + "".join(f" {k}={v}" for k, v in overrides.items()) + ("" if args.store == "embedded" else " store=memory")
    try:
        paces = [int(p) for p in args.pace.split(",")]
    except ValueError:
        parser.error(f"--pace {args.pace!r}: messages a turn, as whole numbers (1 or 1,5)")
    if any(p < 1 for p in paces):
        parser.error("--pace: at least one message a turn")
    embedder = SentenceTransformerEmbedder()
    runs_by_pace: dict[int, list[dict[str, Any]]] = {}
    for pace in paces:
        results = runs_by_pace[pace] = []
        begin = time.perf_counter()
        with Progress(transient=True) as bar, tempfile.TemporaryDirectory(prefix="locomo-live-") as tmp:
            for n, conv in enumerate(runs):
                results.append(run_conversation(conv, args, embedder, settings, Path(tmp) / str(n), bar, pace))
        summary = summarise(results)
        n_q = sum(len(c["questions"]) for c in results)
        print(f"pace {pace} (messages a turn): {sum(c['turns'] for c in results)} messages, {len(results)} conversations "
              f"({','.join(map(str, chosen))}), {n_q} questions; {time.perf_counter() - begin:.0f} s; "
              f"load average {load_average()}")
        for c in results:
            print(f"  {c['source']}: {c['turns']} messages in {c['ingest_s']:.0f} s, {c['dreams']} dreams, "
                  f"{c['semantic_records']} semantic records")
        print_lines(summary, f"{label} pace={pace}")
        if earlier is not None:
            for cat, (n, mean, lo, hi) in sorted(paired(questions_of(results), earlier).items()):
                print(f"vs baseline {cat} (n={n}): R@10 change {mean:+.3f}, 95% interval {lo:+.3f} to {hi:+.3f}")
            compared, changed = changed_evidence(questions_of(results), earlier)
            print(f"vs baseline: {compared - len(changed)} of {compared} questions show the same turns, rank by rank")
            for question in changed[:20]:
                print(f"  shows other turns: {question}")
    if len(paces) > 1:
        first = summarise(runs_by_pace[paces[0]])["agent"]["all"]["R@10"]
        for pace in paces[1:]:
            other = summarise(runs_by_pace[pace])["agent"]["all"]["R@10"]
            print(f"pace {pace} against pace {paces[0]}: agent R@10 {other:.3f} against {first:.3f} ({other - first:+.3f})")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        first = runs_by_pace[paces[0]]
        args.json.write_text(json.dumps({"data": str(args.data), "convs": chosen, "settings": overrides,
                                         "store": args.store, "load_average": load_average(), "paces": paces,
                                         "summary": summarise(first), "conversations": first,
                                         "by_pace": {str(p): {"summary": summarise(r), "conversations": r}
                                                     for p, r in runs_by_pace.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
