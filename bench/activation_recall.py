"""Semantic recall with activation scoring at 100k records: p50/p95 of `recall(..., explain=True)`.

    python bench/activation_recall.py [--records 100000] [--store chroma|memory] [--queries 300] [--json PATH]

Every query is scored the spec's way (vector + BM25 similarity fused, ACT-R base level over each
record's access times, spreading activation from two context records over the graph's edges,
FSRS retrievability) with the parts returned. The semantic memory is the one `open_memory(config)`
opens for the agent (SQLite, the `chromaMode` vector store). Records are loaded in bulk into its stores
(reconciling 100k synthetic records one by one would measure set-up, not recall); each has 0-20
access times over the last 90 days and two RELATED_TO edges. Vectors come from the hash embedder
(384-d) so the set-up takes minutes, not an hour; the real MiniLM query embedding is timed apart and
added to give the figure a MiniLM deployment would see.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _common import median, percentile, report  # noqa: E402

from mettaclaw.config import load_config  # noqa: E402
from mettaclaw.memory import open_memory  # noqa: E402
from mettaclaw.memory.semantic import Edge, SemanticMemory, SemanticRecord  # noqa: E402
from mettaclaw.memory.semantic.normalize import content_key  # noqa: E402

PEOPLE = ["Alice", "Bob", "Carol", "Dmitri", "Esther", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemal", "Lena"]
THINGS = ["coffee mug", "laptop", "bicycle", "umbrella", "notebook", "kettle", "phone", "backpack", "lamp", "keys",
          "guitar", "camera", "passport", "charger", "scarf", "tent", "printer", "plant", "kayak", "drill"]
PLACES = ["Paris", "Leeds", "Oslo", "Lima", "Kyoto", "the office", "the garden", "the attic", "the garage", "the lab"]
VERBS = ["keeps", "lent", "repaired", "bought", "borrowed", "cleaned", "sold", "painted", "lost", "found"]
DAY = 86400.0


def texts(n: int, rng: random.Random) -> list[str]:
    return [f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} the {rng.choice(THINGS)} in {rng.choice(PLACES)} "
            f"(note {i}, batch {rng.randint(1, 999)})." for i in range(n)]


def load(semantic: SemanticMemory, n: int, now: float, rng: random.Random) -> None:
    from rich.progress import Progress

    contents = texts(n, rng)
    ids: list[str] = []
    with Progress(transient=True) as bar:
        task = bar.add_task("loading records", total=n)
        for start in range(0, n, 2000):
            chunk = contents[start : start + 2000]
            vectors = semantic.embedder.embed(chunk)
            recs = []
            for text, vec in zip(chunk, vectors, strict=True):
                born = now - rng.uniform(1, 365) * DAY
                accesses = sorted(now - rng.uniform(0, 90) * DAY for _ in range(rng.randint(0, 20)))
                recs.append(SemanticRecord(text, "fact", content_key=content_key(text), confidence=0.6,
                                           stability=rng.uniform(5, 60), provenance="direct_ingestion",
                                           source_episodes=[f"ep-{rng.randint(0, n)}"], access_times=accesses,
                                           valid_from=born, recorded_at=born, last_updated=born, embedding=vec))
            for rec in recs:
                rec.lineage = rec.id
            semantic.vectors.add([r.id for r in recs], np.stack([r.embedding for r in recs]), [r.content for r in recs],
                                 [{"kind": "fact", "name": "", "current": True} for _ in recs])
            with semantic.records.transaction():
                for rec in recs:
                    semantic.records.put(rec)
                ids.extend(r.id for r in recs)
                for rec in recs:
                    for _ in range(2):
                        other = ids[rng.randrange(len(ids))]
                        if other != rec.id:
                            a, b = sorted((rec.id, other))
                            semantic.records.put_edge(Edge(a, b, "RELATED_TO", rng.uniform(0.1, 0.9), created_at=now))
            getattr(semantic, "flush", lambda: None)()  # what `learn` does every few writes: index them
            bar.update(task, advance=len(chunk))
    semantic.bench_ids = ids  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--store", choices=("chroma", "memory"), default="chroma")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--minilm", action="store_true", help="also time the MiniLM query embedding (loads torch)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rng = random.Random(11)
    now = time.time()
    with tempfile.TemporaryDirectory(prefix="bench-activation-") as tmp:
        Path(tmp, "priors").mkdir()
        config = load_config([f"memoryDir={tmp}/memory", f"knowledgePriorsDir={tmp}/priors", "embeddingprovider=hash",
                              f"chromaMode={'embedded' if args.store == 'chroma' else 'memory'}"], env={})
        memory = open_memory(config, dream=False)
        semantic = memory.semantic
        start = time.perf_counter()
        load(semantic, args.records, now, rng)
        load_s = time.perf_counter() - start
        queries = [f"where did {rng.choice(PEOPLE)} leave the {rng.choice(THINGS)}" for _ in range(args.queries)]
        ids = semantic.bench_ids  # type: ignore[attr-defined]
        semantic.recall(queries[0], 10, explain=True, touch=False)  # warm caches
        times: list[float] = []
        parts_seen: set[str] = set()
        for q in queries:
            context = [ids[rng.randrange(len(ids))] for _ in range(2)]
            t0 = time.perf_counter()
            hits = semantic.recall(q, 10, explain=True, context=context, touch=False)
            times.append(time.perf_counter() - t0)
            for h in hits:
                parts_seen |= set(h.parts or {})
        touched: list[float] = []
        for q in queries[:100]:
            t0 = time.perf_counter()
            semantic.recall(q, 10, explain=True, touch=True)
            touched.append(time.perf_counter() - t0)
        memory.close()
    rows = [("records", args.records), ("vector store", args.store), ("load s", load_s),
            ("recall p50 ms (explain, context)", 1000 * median(times)),
            ("recall p95 ms (explain, context)", 1000 * percentile(times, 95)),
            ("recall+touch p50 ms", 1000 * median(touched)), ("recall+touch p95 ms", 1000 * percentile(touched, 95)),
            ("score parts", ", ".join(sorted(parts_seen)))]
    if args.minilm:
        from mettaclaw.memory.stores.embedders import SentenceTransformerEmbedder

        real = SentenceTransformerEmbedder()
        real.embed(["warm up"])
        emb_times = []
        for q in queries[:100]:
            t0 = time.perf_counter()
            real.embed([q])
            emb_times.append(time.perf_counter() - t0)
        rows += [("MiniLM query embed p50 ms", 1000 * median(emb_times)),
                 ("MiniLM query embed p95 ms", 1000 * percentile(emb_times, 95)),
                 ("recall p95 + MiniLM embed p95 ms", 1000 * (percentile(times, 95) + percentile(emb_times, 95)))]
    report("semantic recall with activation scoring", rows, args.json, dict(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
