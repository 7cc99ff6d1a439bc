"""Semantic memory at scale: learn p50 and recall p95 at 10k and 100k records, the KNOWLEDGE
block's build time against its budget (`knowledgeMs`) with the level it reached, plus the
false-supersede rate of contradiction detection on the generated set.

    python bench/semantic_scale.py [--sizes 10000,100000] [--embedder local|hash] [--ops 200]
                                   [--pairs 200] [--json bench/results/semantic_scale.json]

The semantic memory is the one `open_memory(config)` opens for the agent (SQLite file + embedded
Chroma collection "semantic") in a temporary folder; a learn is timed as the `learn` skill runs it
(under the memory's lock, then the memory index's copy brought in line). It is pre-filled in bulk (batch embedding, one transaction per batch): the fill is setup, not
a measured figure. Then `--ops` learns (half new facts, a quarter paraphrases of stored ones, a quarter
contradictions) and `--ops` recalls (semantic; and hybrid with a tag filter) go through the public
API, embedding and ranking included, each timed alone. New vectors reach Chroma in batches of 64
(write-behind, see vectorbuffer.py), so a learn's p95 includes the occasional batch flush.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, percentile, report, rss_mb  # noqa: E402

from mettaclaw.memory.semantic.factgen import CITIES, COMPANIES, HOBBIES, NAMES  # noqa: E402

SURNAMES = ["Novak", "Okafor", "Tanaka", "Silva", "Kowalski", "Haddad", "Larsen", "Moreau", "Rossi", "Ivanova",
            "Schmidt", "Nguyen", "Garcia", "Papadopoulos", "Kim", "Mensah", "Costa", "Bauer", "Dubois", "Lind"]
TOPICS = ["the quarterly report", "the staging server", "the garden irrigation", "the team offsite", "the boiler",
          "the mobile app release", "the kitchen inventory", "the backup schedule", "the robot arm", "the library loan"]
STATES = ["needs review", "was updated", "is blocked", "runs nightly", "failed twice", "was postponed", "is on track"]


def person(rng: random.Random, i: int) -> str:
    return f"{rng.choice(NAMES)} {rng.choice(SURNAMES)}-{i}"


def fill_fact(rng: random.Random, i: int) -> tuple[str, list[str]]:
    kind = i % 4
    who = person(rng, i)
    if kind == 0:
        return f"{who} lives in {rng.choice(CITIES)}", ["person", "place"]
    if kind == 1:
        return f"{who} works at {rng.choice(COMPANIES)}", ["person", "work"]
    if kind == 2:
        return f"{who} likes {rng.choice(HOBBIES)} and {rng.choice(HOBBIES)}", ["person", "hobby"]
    return f"Note {i}: {rng.choice(TOPICS)} {rng.choice(STATES)} ({rng.choice(CITIES)} site)", ["note"]


def prefill(mem, n: int, rng: random.Random, batch: int = 512) -> list[str]:
    """Bulk-insert n reconciled-looking records (no reconciliation: every text is unique by construction)."""
    from rich.progress import track

    from mettaclaw.memory.semantic.normalize import content_key, extract_triple
    from mettaclaw.memory.semantic.records import SemanticRecord, confidence_from

    texts_out: list[str] = []
    now = time.time() - 86400.0
    for start in track(range(0, n, batch), description=f"fill {n:,}"):
        facts = [fill_fact(rng, i) for i in range(start, min(n, start + batch))]
        vectors = mem.embedder.embed([t for t, _ in facts])
        recs = []
        for (text, tags), vec in zip(facts, vectors, strict=True):
            t = extract_triple(text)
            rec = SemanticRecord(text, "fact", "", "", content_key(text), None, {}, None, None, confidence_from(1),
                                 tags=tags, valid_from=now, recorded_at=now, last_updated=now,
                                 subject=t.subject if t else None, relation=t.relation if t else None,
                                 object=t.object if t else None, embedding=vec)
            rec.lineage = rec.id
            recs.append(rec)
        mem.vectors.add([r.id for r in recs], vectors, [r.content for r in recs],
                        [{"kind": "fact", "name": "", "current": True} for _ in recs])
        with mem.records.transaction():
            for rec in recs:
                mem.records.put(rec)
        texts_out += [r.content for r in recs]
    return texts_out


def learn_ops(rng: random.Random, stored: list[str], n: int, base: int) -> list[str]:
    ops = []
    for j in range(n):
        r = j % 4
        if r in (0, 1):
            ops.append(f"{person(rng, base + j)} speaks {rng.choice(['French', 'Greek', 'Polish'])}")
        elif r == 2:
            old = rng.choice([s for s in stored[:2000] if " lives in " in s])
            ops.append(old.replace(" lives in ", " resides in "))  # paraphrase: reinforce
        else:
            old = rng.choice([s for s in stored[:2000] if " works at " in s])
            ops.append(old.split(" works at ")[0] + " now works for " + rng.choice(["Hooli", "Globex", "Initech"]))
    return ops


def timed(fn, items):
    out = []
    for item in items:
        start = time.perf_counter()
        fn(item)
        out.append((time.perf_counter() - start) * 1000)
    return out


def false_supersede(embedder, pairs_sample: int) -> dict[str, float]:
    from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
    from mettaclaw.memory.semantic.factgen import (
        HARD_PAIRS,
        HELD_OUT_PAIRS,
        contradicting_pairs,
        unrelated_pairs,
    )
    from mettaclaw.memory.stores.vectors import InMemoryVectorStore

    rng = random.Random(5)
    unrelated, contra = unrelated_pairs(), contradicting_pairs()
    if pairs_sample and pairs_sample < len(unrelated):
        unrelated = rng.sample(unrelated, pairs_sample)
        contra = rng.sample(contra, min(len(contra), pairs_sample // 2))

    def second_action(a: str, b: str) -> str:
        m = SemanticMemory(embedder, InMemoryVectorStore(), InMemorySemanticStore())
        m.learn(a)
        return m.learn(b).action

    false = [second_action(a, b) for a, b, _ in unrelated]
    true = [second_action(a, b) for a, b, _ in contra]
    hard = [second_action(a, b) for a, b in HARD_PAIRS]
    held = [second_action(a, b) for a, b in HELD_OUT_PAIRS]
    return {"unrelated_pairs": len(false), "false_supersede": false.count("superseded"),
            "false_supersede_rate": false.count("superseded") / len(false),
            "false_merge_or_reinforce": sum(a in ("merged", "reinforced") for a in false),
            "contradiction_pairs": len(true), "contradictions_detected": true.count("superseded"),
            "detection_rate": true.count("superseded") / len(true),
            "hand_tuning_set_false_supersede": f"{hard.count('superseded')}/{len(hard)}",
            "hand_held_out_false_supersede": f"{held.count('superseded')}/{len(held)}"}


def run_size(n: int, embedder: str, ops: int, folder: Path) -> tuple[dict[str, float], object]:
    from mettaclaw.config import load_config
    from mettaclaw.memory import open_memory

    rng = random.Random(n)
    (folder / "priors").mkdir()
    config = load_config([f"memoryDir={folder / 'memory'}", f"knowledgePriorsDir={folder / 'priors'}",
                          f"embeddingprovider={embedder}"], env={})
    memory = open_memory(config, dream=False)
    mem = memory.semantic
    start = time.perf_counter()
    stored = prefill(mem, n, rng)
    fill_s = time.perf_counter() - start
    learns = learn_ops(rng, stored, ops, n)
    queries = [f"where does {s.split(' lives in ')[0]} live" for s in rng.sample([s for s in stored if " lives in " in s], ops // 2)]
    queries += [f"what is the status of {rng.choice(TOPICS)}" for _ in range(ops - len(queries))]
    for j in range(20):  # warm-up, not measured: the model, caches, and Chroma digesting the bulk fill
        mem.learn(f"warm-up fact number {j} about {rng.choice(TOPICS)}")
        mem.recall(f"warm-up query {j}")
    actions: dict[str, int] = {}

    def do_learn(text: str) -> None:
        with memory.lock:
            act = mem.learn(text).action
            memory.sync_mirror()
        actions[act] = actions.get(act, 0) + 1

    embed_ms = timed(lambda text: mem.embedder.embed([text]), learns[:50])  # the model's share, same run
    learn_ms = timed(do_learn, learns)
    recall_ms = timed(lambda q: mem.recall(q, limit=10), queries)
    status = queries[ops // 2 :]
    hybrid_ms = timed(lambda q: mem.recall(q, limit=10, mode="hybrid", tags_all=["note"]), status[: ops // 4])
    knowledge_ms = timed(lambda q: mem.knowledge_block(q, 1500), queries[: ops // 4])
    levels: dict[str, int] = {}

    def build(q: str) -> None:  # the KNOWLEDGE block as the agent builds it: within knowledgeMs
        level = mem.context(q, config.knowledgeChars, budget_ms=config.knowledgeMs).level
        levels[level] = levels.get(level, 0) + 1

    context_ms = timed(build, queries[: ops // 2])
    size_mb = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20
    real_embedder = memory.embedder
    memory.close()
    return {"records": n, "fill_s": fill_s, "embed_one_p50_ms": median(embed_ms), "learn_p50_ms": median(learn_ms), "learn_p95_ms": percentile(learn_ms, 95),
            "recall_p50_ms": median(recall_ms), "recall_p95_ms": percentile(recall_ms, 95),
            "hybrid_tag_filter_p95_ms": percentile(hybrid_ms, 95), "knowledge_block_p95_ms": percentile(knowledge_ms, 95),
            "context_budget_ms": config.knowledgeMs, "context_p50_ms": median(context_ms),
            "context_p95_ms": percentile(context_ms, 95), **{f"context_level_{k}": v for k, v in sorted(levels.items())},
            "disk_mb": size_mb, "rss_mb": rss_mb(), **{f"learn_actions_{k}": v for k, v in sorted(actions.items())}}, real_embedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--embedder", choices=["local", "hash"], default="local")
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=200,
                        help="unrelated pairs sampled for the false-supersede rate with the chosen embedder (-1: skip)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embedder = None  # the memory's own, kept from the first size for the false-supersede sample
    results: dict[str, object] = {"embedder": args.embedder, "ops": args.ops}
    rows: list[tuple[str, object]] = []
    for n in (int(s) for s in args.sizes.split(",") if s):
        with tempfile.TemporaryDirectory() as tmp:
            res, embedder = run_size(n, args.embedder, args.ops, Path(tmp))
        results[str(n)] = res
        rows += [(f"{n:,}: {k}", v) for k, v in res.items() if k != "records"]
    from mettaclaw.memory.stores.embedders import HashEmbedder

    results["contradiction_hash_all_pairs"] = false_supersede(HashEmbedder(256), 0)
    if args.embedder == "local" and args.pairs >= 0 and embedder is not None:
        results["contradiction_local_sample"] = false_supersede(embedder, args.pairs)
    for key in ("contradiction_hash_all_pairs", "contradiction_local_sample"):
        if key in results:
            rows += [(f"{key}: {k}", v) for k, v in results[key].items()]  # type: ignore[union-attr]
    report(f"semantic memory at scale ({args.embedder} embedder)", rows, args.json, results)


if __name__ == "__main__":
    main()
