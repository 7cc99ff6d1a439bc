"""LoCoMo evidence recall through the project's own memory API (real embedder, real embedded Chroma).

Every turn of every conversation becomes one memory: "Speaker: text" (plus the shared photo's
caption), the session date as its time, the conversation as its source, the speaker as a tag, and
the two turns before and after it as index-only context. Each question is asked alone, filtered to
its conversation, and scored by evidence recall@k: the share of its evidence turns among the top k.
Nothing here looks at a question's answer or evidence before scoring; the same code runs on any
file of the same shape.

    python bench/locomo.py [--data PATH] [--mode hybrid|vector|bm25|pipeline] [--json PATH] [--limit-convs N]

Mode `pipeline` is the full agent pipeline (bench/locomo_pipeline.py): the turns become episodes, a
dream consolidates them, and each question is answered with the agent's own recall.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mettaclaw.memory.chroma import ChromaVectorStore  # noqa: E402
from mettaclaw.memory.embedders import SentenceTransformerEmbedder, signature  # noqa: E402
from mettaclaw.memory.longterm import MODES, LongTermMemory  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (5, 10, 20)
CONTEXT_TURNS = 2  # turns before and after a turn, indexed with it (same session only)
_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Words and punctuation marks: a tokenizer-free stand-in for what the model pays."""
    return len(_TOKEN.findall(text))


def session_time(raw: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08 13:56:00'."""
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").strftime("%Y-%m-%d %H:%M:%S")


def turn_text(turn: dict) -> str:
    caption = turn.get("blip_caption")
    return f"{turn['speaker']}: {turn['text']}" + (f" [shares a photo of {caption}]" if caption else "")


def load(path: Path) -> list[dict]:
    """Conversations with their turns (in order, with session times) and scorable questions."""
    convs = []
    for n, sample in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        conv = sample["conversation"]
        sessions = sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        turns = []
        for key in sessions:
            when = session_time(conv[f"{key}_date_time"])
            for idx, turn in enumerate(conv[key]):
                turns.append({"dia_id": turn["dia_id"], "text": turn_text(turn), "speaker": turn["speaker"],
                              "time": when, "session": key, "idx": idx})
        known = {t["dia_id"] for t in turns}
        questions = []
        for qa in sample["qa"]:
            ids = {f"D{s}:{t}" for e in qa.get("evidence", []) for s, t in re.findall(r"D:?(\d+):(\d+)", str(e))}
            evidence = sorted(ids & known)
            if evidence:  # a few questions name no existing turn: they cannot be scored
                questions.append({"question": qa["question"], "evidence": evidence, "category": qa["category"]})
        convs.append({"source": f"locomo:{sample.get('sample_id', n)}", "turns": turns, "questions": questions})
    return convs


def memories_for(conv: dict) -> list[dict]:
    turns = conv["turns"]
    items = []
    for i, turn in enumerate(turns):
        near = [turns[j]["text"] for j in range(i - CONTEXT_TURNS, i + CONTEXT_TURNS + 1)
                if j != i and 0 <= j < len(turns) and turns[j]["session"] == turn["session"]]
        items.append({"text": turn["text"], "time": turn["time"], "source": conv["source"], "tags": [turn["speaker"]],
                      "kind": "turn", "extra": {"dia_id": turn["dia_id"], "context": "\n".join(near)}})
    return items


def ingest(memory: LongTermMemory, convs: list[dict]) -> float:
    from rich.progress import Progress

    items = [item for conv in convs for item in memories_for(conv)]
    start = time.perf_counter()
    with Progress(transient=True) as bar:
        task = bar.add_task("indexing turns", total=len(items))
        for pos in range(0, len(items), 256):
            memory.remember_many(items[pos : pos + 256])
            bar.update(task, advance=len(items[pos : pos + 256]))
    return time.perf_counter() - start


def cited(memory) -> set[str]:  # noqa: ANN001
    """The turns a memory stands for: its own turn, or the turns a derived memory cites."""
    return set(str(memory.meta.get("cites", "")).split("|")) - {""} | {str(memory.meta.get("dia_id", ""))} - {""}


def evaluate(memory: LongTermMemory, convs: list[dict], mode: str) -> dict:
    from rich.progress import Progress

    recall: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    per_conv: dict[str, list[float]] = defaultdict(list)
    tokens: list[int] = []
    latencies: list[float] = []
    total = sum(len(c["questions"]) for c in convs)
    with Progress(transient=True) as bar:
        task = bar.add_task(f"asking ({mode})", total=total)
        for conv in convs:
            for qa in conv["questions"]:
                start = time.perf_counter()
                found = memory.query(qa["question"], limit=max(KS), mode=mode, source=conv["source"])
                latencies.append(time.perf_counter() - start)
                evidence = set(qa["evidence"])
                for k in KS:
                    covered = set().union(*(cited(m) for m in found[:k])) if found else set()
                    share = len(evidence & covered) / len(evidence)
                    recall[CATEGORIES.get(qa["category"], str(qa["category"]))][k].append(share)
                    recall["all"][k].append(share)
                    if k == 10:
                        per_conv[conv["source"]].append(share)
                tokens.append(sum(count_tokens(m.text) for m in found[:10]))
                bar.update(task, advance=1)
    latencies.sort()
    return {
        "by_category": {cat: {"n": len(r[10]), **{f"R@{k}": sum(r[k]) / len(r[k]) for k in KS}}
                        for cat, r in recall.items()},
        "R@10_by_conversation": {src: sum(v) / len(v) for src, v in per_conv.items()},
        "tokens@10": sum(tokens) / len(tokens),
        "query_p50_ms": 1000 * latencies[len(latencies) // 2],
        "query_p95_ms": 1000 * latencies[int(len(latencies) * 0.95)],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "locomo-dev.json")
    parser.add_argument("--mode", choices=[*MODES, "pipeline"], help="one recall mode (default: all)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--limit-convs", type=int, help="only the first N conversations (quick checks)")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"no data file at {args.data}")
    convs = load(args.data)[: args.limit_convs]
    modes = [args.mode] if args.mode else [*MODES, "pipeline"]
    pipeline: dict = {"modes": {}}
    if "pipeline" in modes:
        from locomo_pipeline import print_lines, run_pipeline  # it imports this module: import it late

        modes.remove("pipeline")
        pipeline = run_pipeline(convs, SentenceTransformerEmbedder(), compare=False)
        print_lines(pipeline)
        if not modes:
            if args.json:
                args.json.write_text(json.dumps({"data": str(args.data), **pipeline}, indent=1))
            return 0
    embedder = SentenceTransformerEmbedder()
    folder = Path(tempfile.mkdtemp(prefix="locomo-chroma-"))
    memory = LongTermMemory(embedder, ChromaVectorStore.embedded(folder, embedder_signature=signature(embedder)))
    try:
        ingest_s = ingest(memory, convs)
        n_turns, n_questions = len(memory), sum(len(c["questions"]) for c in convs)
        print(f"{n_turns} turns from {len(convs)} conversations indexed in {ingest_s:.1f} s; {n_questions} questions")
        results = dict(pipeline["modes"])
        for mode in modes:
            res = results[mode] = evaluate(memory, convs, mode)
            for cat in [*CATEGORIES.values(), "all"]:
                if cat in res["by_category"]:
                    r = res["by_category"][cat]
                    line = f"{mode} {cat} " + " ".join(f"R@{k}={r[f'R@{k}']:.3f}" for k in KS)
                    if cat == "all":
                        line += f" tokens@10={res['tokens@10']:.0f}"
                    print(line + ("" if cat == "all" else f" (n={r['n']})"))
            print(f"{mode} query p50={res['query_p50_ms']:.1f} ms p95={res['query_p95_ms']:.1f} ms")
    finally:
        memory.close()
        shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps({"data": str(args.data), "turns": n_turns, "questions": n_questions,
                                         "embedder": signature(embedder), "ingest_s": ingest_s,
                                         "fusion_weights": memory.weights, "modes": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
