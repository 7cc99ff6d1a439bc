"""BEAM evidence recall through the live agent: a user's chat with an assistant, told at a real pace.

Each BEAM chat (`../shared/data/beam-100k/N`: a user and an assistant, the assistant's replies often
thousands of characters) is one agent: `open_memory` with the default configuration (real MiniLM,
embedded Chroma, the dreamer on its default triggers) and the agent's MeTTa loop with a model scripted
to do nothing. Every message, the user's and the assistant's alike, arrives through a channel from its
role; `--pace K` puts K messages into the channel before each turn (a slow model or a busy room gathers
several), never across two of the chat's batches. Each batch's time anchor is its date; its messages
come a minute apart (an injected clock); dreams run when the default settings trigger them.

Each probing question is then asked alone through the `query` skill, as the user (the asker a turn the
user's message started would give it: a question about "my" sprint is about the user's words), and scored from the record ids the
skill shows: a message's episode counts for that message, however little of it is shown (a long one is
shown by its passage); a derived record counts for the messages it cites that its shown text shows. Its
tokens are counted on the text shown: what the model reads. Evidence is the question's `source_chat_ids`,
every message it names; abstention questions (and the few with no evidence) are listed apart, not scored. For knowledge-update questions it also counts how often the
updated message ranks above the original (`updated_first`). Plain BM25 and plain vector rankings over
the same episode rows run in the same pass, for ratios. Nothing looks at an answer before scoring.

    python bench/beam.py [--chats 1-10 | --chats 11-20 | --chats 3,5] [--pace 1 | --pace 5]
                         [--json PATH] [--set NAME=VALUE ...] [--store memory] [--baseline EARLIER.json]

By default all 20 chats at pace 1 and at pace 5, the figures printed for chats 1-10 (tuning), 11-20
(held out) and all. `--set`, `--store` and `--baseline` are as in bench/locomo.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
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
    MODES,
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

ABILITIES = ("contradiction_resolution", "event_ordering", "information_extraction", "instruction_following",
             "knowledge_update", "multi_session_reasoning", "preference_following", "summarization",
             "temporal_reasoning")
ABSTENTION = "abstention"
# The named parts of a dict of evidence: every part is evidence; knowledge update's also order it.
EVIDENCE_PARTS = ({"original_info", "updated_info"}, {"first_statement", "second_statement"},
                  {"first_event", "second_event"})
PACES = (1, 5)
HALVES = ((range(1, 11), "chats 1-10"), (range(11, 21), "chats 11-20"))
DAY_START_S = 9 * 3600  # a batch's first message at 9:00 on its anchor date
MESSAGE_GAP_S = 60
UPDATE_DEPTH = max(KS)  # `updated_first` looks at the first 20 shown


def message_ids(value: Any, where: str) -> list[int]:
    """The message ids in a list of ids or of lists of ids (one per item), flattened in order."""
    if isinstance(value, bool) or not isinstance(value, int | list):
        raise ValueError(f"{where}: evidence must be message ids or lists of them, not {value!r}")
    return [value] if isinstance(value, int) else [i for v in value for i in message_ids(v, where)]


def evidence_of(source: Any, where: str) -> list[int]:
    """Every message a question's `source_chat_ids` names, each once, in order: a list (of ids or of
    lists of ids), or a dict of named parts (knowledge update, contradiction, temporal: all parts)."""
    if isinstance(source, dict):
        if set(source) not in EVIDENCE_PARTS:
            raise ValueError(f"{where}: evidence parts {sorted(source)} are none of {[sorted(p) for p in EVIDENCE_PARTS]}")
        ids = [i for part in sorted(source) for i in message_ids(source[part], f"{where} {part}")]
    elif isinstance(source, list):
        ids = message_ids(source, where)
    else:
        raise ValueError(f"{where}: evidence must be a list or a dict of named parts, not {source!r}")
    return list(dict.fromkeys(ids))


def update_parts(source: Any, where: str) -> tuple[list[int], list[int]] | None:
    """(original, updated) message ids of a knowledge-update question, or None when their order is
    undefined: a part is empty, or both name the same message."""
    if not isinstance(source, dict) or set(source) != {"original_info", "updated_info"}:
        raise ValueError(f"{where}: a knowledge-update question's evidence is original_info and updated_info, not {source!r}")
    original = message_ids(source["original_info"], f"{where} original_info")
    updated = message_ids(source["updated_info"], f"{where} updated_info")
    return (original, updated) if original and updated and not set(original) & set(updated) else None


def updated_first(ranked: list[list[int]], original: list[int], updated: list[int]) -> bool:
    """The best rank of an updated message is better than the best rank of an original one, within
    the first UPDATE_DEPTH hits (each hit given as the messages it stands for); an updated message
    found when no original is counts as above, neither found as not."""
    def best(ids: list[int]) -> int | None:
        return next((rank for rank, messages in enumerate(ranked[:UPDATE_DEPTH]) if set(ids) & set(messages)), None)

    up, orig = best(updated), best(original)
    return up is not None and (orig is None or up < orig)


def anchor_time(anchor: str, where: str) -> float:
    """'March-15-2024' -> seconds at DAY_START_S that day (local time, as the agent's clock reads)."""
    try:
        return datetime.strptime(anchor, "%B-%d-%Y").timestamp() + DAY_START_S
    except ValueError as exc:
        raise ValueError(f"{where}: time anchor {anchor!r} is not like March-15-2024") from exc


def load_chat(folder: Path, chat: int) -> dict[str, Any]:
    """A chat: its batches of messages (id, role, content, time) and its questions, by ability, with
    evidence flattened; a shape this reader does not know is an error naming the place."""
    batches = []
    for batch in json.loads((folder / "chat.json").read_text(encoding="utf-8")):
        messages = [m for exchange in batch["turns"] for m in exchange]
        where = f"chat {chat} batch {batch['batch_number']}"
        # the batch's own anchor is empty in this release; its first message carries it
        anchor = batch.get("time_anchor") or next((m["time_anchor"] for m in messages if m.get("time_anchor")), None)
        if anchor is None:
            raise ValueError(f"{where}: no time anchor on the batch or any of its messages")
        start = anchor_time(anchor, where)
        batches.append([{"id": m["id"], "role": m["role"], "content": m["content"],
                         "time": start + MESSAGE_GAP_S * n} for n, m in enumerate(messages)])
    known = {m["id"] for batch in batches for m in batch}
    questions = []
    for ability, asked in json.loads((folder / "probing_questions.json").read_text(encoding="utf-8")).items():
        for n, q in enumerate(asked):
            where = f"chat {chat} {ability} question {n}"
            source = q.get("source_chat_ids")
            evidence = [] if ability == ABSTENTION or source is None else evidence_of(source, where)
            if unknown := set(evidence) - known:
                raise ValueError(f"{where}: evidence names no message of the chat: {sorted(unknown)}")
            entry: dict[str, Any] = {"question": q["question"], "ability": ability, "evidence": evidence}
            if ability == "knowledge_update":
                entry["update"] = update_parts(source, where)
            questions.append(entry)
    return {"chat": chat, "source": f"beam:{chat}", "batches": batches, "questions": questions}


def paced(batches: list[list[dict[str, Any]]], pace: int) -> Iterator[list[dict[str, Any]]]:
    """The messages one turn gathers: `pace` at a time, never two batches' messages in one turn (weeks
    lie between them)."""
    for batch in batches:
        for start in range(0, len(batch), pace):
            yield batch[start : start + pace]


def episode_messages(messages: list[int], episodes: list[str]) -> dict[str, list[int]]:
    """Each message's episode -> that BEAM message (the turn's outcome lists one episode a message, in
    message order); a turn that names another number of episodes is an error, not a guess."""
    if len(episodes) != len(messages):
        raise ValueError(f"a turn of {len(messages)} messages named {len(episodes)} message episodes: {episodes}")
    return {episode: [message] for episode, message in zip(episodes, messages, strict=True)}


def hit_messages(record_id: str, text: str, cited: list[str], messages_of: dict[str, list[int]],
                 text_of: dict[int, str]) -> list[int]:
    """The BEAM messages a shown hit stands for: a message's own episode stands for it however little
    of it is shown (a long message is shown by its passage); a derived record, for each message among
    the episodes it cites that its shown text shows (quoting a line of a message is not showing all)."""
    if record_id in messages_of:
        return messages_of[record_id]
    messages = dict.fromkeys(m for episode in cited for m in messages_of.get(episode, ()))
    return [m for m in messages if shows(text, text_of[m])]


def run_chat(chat: dict[str, Any], pace: int, args: argparse.Namespace, embedder: Any,
             settings: RecallSettings, folder: Path, bar: Any) -> dict[str, Any]:
    config = load_config([f"memoryDir={folder}", "provider=scripted", f"chromaMode={args.store}"], env={})
    clock = SessionClock()
    memory = open_memory(config, embedder=embedder, clock=clock, settings=settings)
    channel = QueueChannel(name=chat["source"])
    agent = Agent(config, Scripted([]), channel, memory, clock=clock)
    messages_of: dict[str, list[int]] = {}  # episode id -> the BEAM message it holds
    text_of: dict[int, str] = {}
    turn_ms: list[float] = []
    count = sum(len(batch) for batch in chat["batches"])
    task = bar.add_task(f"{chat['source']} pace {pace}: messages", total=count)
    start = time.perf_counter()
    try:
        for group in paced(chat["batches"], pace):
            clock.now = group[-1]["time"]  # the turn runs when the last of its messages has come
            memory.dreamer.tick()  # a dream the schedule made due since the last turn
            memory.dreamer.wait()  # has run by the time the next message arrives, as it would live
            for m in group:
                channel.put(Message(m["content"], m["role"], chat["source"]))
                text_of[m["id"]] = f"{m['role']}: {m['content']}"
            t0 = time.perf_counter()
            outcome = agent.turn()
            turn_ms.append(1000 * (time.perf_counter() - t0))
            messages_of.update(episode_messages([m["id"] for m in group], outcome.message_ids))
            memory.dreamer.wait()
            bar.advance(task, len(group))
        ingest_s = time.perf_counter() - start
        ingest_load = os.getloadavg()[0]
        report = memory.dreamer.last_report
        bar.update(task, visible=False)
        asked = ask(chat, pace, agent, memory, messages_of, text_of, bar)
        return {"chat": chat["chat"], "source": f"{chat['source']} pace {pace}", "pace": pace, "messages": count,
                "turns": len(turn_ms), "ingest_s": ingest_s, "turn_ms_p50": median(turn_ms),
                "turn_ms_p95": percentile(turn_ms, 95), "dreams": memory.dreamer.state.dreams,
                "last_dream": report.counts() if report else None, "semantic_records": len(memory.semantic),
                "load_1min": [ingest_load, os.getloadavg()[0]], **asked}
    finally:
        agent.close()
        memory.close()


def ask(chat: dict[str, Any], pace: int, agent: Agent, memory: Any, messages_of: dict[str, list[int]],
        text_of: dict[int, str], bar: Any) -> dict[str, list[dict[str, Any]]]:
    """Each question through the `query` skill, and the plain BM25 and vector rankings beside it; the
    questions with no evidence keep what was shown for them, unscored."""
    scored_questions, unscored = [], []
    task = bar.add_task(f"{chat['source']} pace {pace}: questions", total=len(chat["questions"]))
    agent.memory_skills.asker = "user"  # BEAM's questions are the user's, as in a turn the user's message started
    for qa in chat["questions"]:
        memory.embedder.forget(qa["question"])  # every timed query pays for its own embedding
        t0 = time.perf_counter()
        shown = agent.use_skill("query", qa["question"])
        agent_ms = 1000 * (time.perf_counter() - t0)
        memory.apply_touches()  # as the end of the turn that asked it would: the next question ranks with them
        ranked = [(text, hit_messages(record_id, text, memory.cites(record_id), messages_of, text_of))
                  for record_id, text in shown_hits(shown)]
        entry = {**qa, "pace": pace, "agent_ms": agent_ms, "shown": [[t, messages] for t, messages in ranked]}
        if not qa["evidence"]:
            unscored.append(entry)
            bar.advance(task)
            continue
        evidence = set(qa["evidence"])
        entry["agent"] = scored(ranked, evidence)
        hits = {"agent": [messages for _, messages in ranked]}
        for mode in ("bm25", "vector"):
            memory.embedder.forget(qa["question"])
            t0 = time.perf_counter()
            plain = memory.index.query(qa["question"], limit=max(KS), mode=mode, kind="episode")
            entry[f"{mode}_ms"] = 1000 * (time.perf_counter() - t0)
            plain_ranked = [(m.text, messages_of.get(m.id, [])) for m in plain]
            entry[mode] = scored(plain_ranked, evidence)
            hits[mode] = [messages for _, messages in plain_ranked]
        if qa.get("update"):
            original, updated = qa["update"]
            entry["updated_first"] = {mode: updated_first(hits[mode], original, updated) for mode in MODES}
        scored_questions.append(entry)
        bar.advance(task)
    bar.update(task, visible=False)
    return {"questions": scored_questions, "unscored": unscored}


def ability(q: dict[str, Any]) -> str:
    return str(q["ability"])


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Recall by ability per ranking, latency, how often the updated message came first, and ingest
    per message (dreams included)."""
    questions = questions_of(runs)
    out = recall_summary(questions, ability)
    ordered = [q["updated_first"] for q in questions if "updated_first" in q]
    out["updated_first"] = {mode: sum(o[mode] for o in ordered) for mode in MODES}
    out["updated_first_of"] = len(ordered)
    out["updated_undefined"] = sum(1 for q in questions if q["ability"] == "knowledge_update" and not q.get("update"))
    out["ingest_ms_per_message"] = 1000 * sum(r["ingest_s"] for r in runs) / sum(r["messages"] for r in runs)
    out["turn_ms_p50_median"] = median([r["turn_ms_p50"] for r in runs])
    loads = [load for r in runs for load in r["load_1min"]]
    out["load_1min_range"] = (min(loads), max(loads))
    return out


def chat_sets(chats: list[int], named: str) -> list[tuple[str, list[int]]]:
    """The sets figures are printed for: the chosen chats, and first each half of them when they
    reach both the tuning half (1-10) and the held-out half (11-20)."""
    halves = [(label, [c for c in chats if c in half]) for half, label in HALVES]
    if all(chosen for _, chosen in halves):
        return [*halves, ("all chats", chats)]
    return [(f"chats {named}", chats)]


def unscored_of(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return questions_of([{**r, "questions": r["unscored"]} for r in runs])


def print_lines(summary: dict[str, Any], label: str) -> None:
    print_recall(summary, label, ABILITIES)
    n, undefined = summary["updated_first_of"], summary["updated_undefined"]
    print("updated above original (first 20 shown): " + ", ".join(
        f"{name} {summary['updated_first'][mode]} of {n}" for mode, name in zip(MODES, (label, "bm25", "vector"), strict=True))
        + (f"; {undefined} knowledge-update question(s) left out: no original or updated message, or the same" if undefined else ""))
    print(f"ingest {summary['ingest_ms_per_message']:.1f} ms per message (dreams included); turn p50 "
          f"{summary['turn_ms_p50_median']:.1f} ms; agent query p95 / vector query p95 = "
          f"{summary['agent_p95_over_vector_p95']:.2f}; 1-minute load average after each chat's ingest and "
          "questions {:.2f} to {:.2f}".format(*summary["load_1min_range"]))


def chat_numbers(spec: str) -> list[int]:
    """'1-10' or '3' or '1,4,7-9' -> chat numbers, in order."""
    out: list[int] = []
    for part in spec.split(","):
        first, _, last = part.partition("-")
        out.extend(range(int(first), int(last or first) + 1))
    return list(dict.fromkeys(out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "beam-100k")
    parser.add_argument("--json", type=Path, help="write the figures (and every question's shown messages) here")
    parser.add_argument("--chats", default="1-20", help="chat numbers: 1-10 (tuning), 11-20 (held out), 3, 1,4 ...")
    parser.add_argument("--pace", type=int, choices=PACES, help="messages a turn (default: each of 1 and 5)")
    add_settings_option(parser)
    parser.add_argument("--baseline", type=Path, help="an earlier --json file: R@10 changes question by question")
    parser.add_argument("--store", choices=["embedded", "memory"], default="embedded",
                        help="chromaMode (default embedded, as shipped; memory: exact in-process vectors)")
    args = parser.parse_args(argv)
    try:
        chats = chat_numbers(args.chats)
    except ValueError:
        parser.error(f"--chats {args.chats!r} is not like 1-10 or 3,5")
    if missing := [c for c in chats if not (args.data / str(c) / "chat.json").is_file()]:
        parser.error(f"no chat.json for chat(s) {missing} under {args.data}")
    earlier = None
    if args.baseline:
        try:
            earlier = json.loads(args.baseline.read_text())["questions"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            parser.error(f"--baseline {args.baseline} is not a file this benchmark wrote with --json: {exc}")
    settings, overrides = recall_settings(parser, args.set)
    from rich.progress import Progress

    from mettaclaw.memory.stores.embedders import SentenceTransformerEmbedder

    loaded = [load_chat(args.data / str(c), c) for c in chats]
    paces = [args.pace] if args.pace else list(PACES)
    label = "live" + "".join(f" {k}={v}" for k, v in overrides.items()) + ("" if args.store == "embedded" else " store=memory")
    embedder = SentenceTransformerEmbedder()
    runs = []
    begin = time.perf_counter()
    with Progress(transient=True) as bar, tempfile.TemporaryDirectory(prefix="beam-live-") as tmp:
        for pace in paces:
            for chat in loaded:
                runs.append(run_chat(chat, pace, args, embedder, settings, Path(tmp) / f"{chat['chat']}-{pace}", bar))
    print(f"{sum(len(b) for c in loaded for b in c['batches'])} messages, {len(loaded)} chats ({args.chats}), "
          f"{sum(len(c['questions']) for c in loaded)} questions, pace {' and '.join(map(str, paces))}; "
          f"{time.perf_counter() - begin:.0f} s; load average {load_average()}")
    summaries: dict[str, dict[str, Any]] = {}
    for pace in paces:
        at_pace = [r for r in runs if r["pace"] == pace]
        for r in at_pace:
            print(f"  {r['source']}: {r['messages']} messages in {r['turns']} turns, {r['ingest_s']:.0f} s "
                  f"(load {r['load_1min'][0]:.2f}), {r['dreams']} dreams, {r['semantic_records']} semantic records")
        unscored = unscored_of(at_pace)
        print(f"pace {pace}: {len(unscored)} questions not scored "
              f"({sum(q['ability'] == ABSTENTION for q in unscored)} abstention, the rest with no evidence):")
        for q in unscored:
            print(f"  {q['source']} {q['ability']}: {q['question'][:100]}")
        for name, chosen in chat_sets(chats, args.chats):
            summary = summarise([r for r in at_pace if r["chat"] in chosen])
            summaries[f"pace {pace}, {name}"] = summary
            print(f"--- pace {pace}, {name}")
            print_lines(summary, label)
    questions = questions_of(runs)
    if earlier is not None:
        for group, (n, mean, lo, hi) in sorted(_recall.paired(questions, earlier, ability).items()):
            print(f"vs baseline {group} (n={n}): R@10 change {mean:+.3f}, 95% interval {lo:+.3f} to {hi:+.3f}")
        compared, changed = changed_evidence(questions, earlier)
        print(f"vs baseline: {compared - len(changed)} of {compared} questions show the same messages, rank by rank")
        for question in changed[:20]:
            print(f"  shows other messages: {question}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"data": str(args.data), "chats": chats, "paces": paces, "settings": overrides,
                                         "store": args.store, "load_average": load_average(), "summary": summaries,
                                         "runs": [{k: v for k, v in r.items() if k not in ("questions", "unscored")}
                                                  for r in runs],
                                         "questions": questions,
                                         "unscored": unscored_of(runs)},
                                        indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
