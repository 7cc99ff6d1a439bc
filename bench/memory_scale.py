"""Long-term memory at scale: `remember` and `query` latency at growing sizes, HNSW recall vs exact.

The store (embedded Chroma, the default HNSW settings of chroma_store.py) is filled up to each size
with synthetic memories: generated sentences whose vectors are mixtures of real all-MiniLM-L6-v2
embeddings (embedding 100k texts on a shared 2-core machine would take most of an hour). Every timed
operation goes through LongTermMemory with the real embedder: `remember` embeds and stores one new
sentence; `query` embeds a question and runs hybrid recall (BM25 + vector, fused). Medians over many
samples; the growth figure compares `remember` p50 at the smallest and largest size in the same run.

    python bench/memory_scale.py [--sizes 1000,10000,100000] [--samples 100] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mettaclaw.memory.chroma import DEFAULT_HNSW, ChromaVectorStore  # noqa: E402
from mettaclaw.memory.embedders import SentenceTransformerEmbedder, signature  # noqa: E402
from mettaclaw.memory.longterm import LongTermMemory  # noqa: E402

NAMES = ["Ada", "Bo", "Caro", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea", "Max", "Nia", "Oto"]
VERBS = ["painted", "visited", "cooked", "repaired", "bought", "read about", "photographed", "sold", "planted",
         "borrowed", "studied", "lost", "found", "built", "cleaned", "sketched", "wrote about", "ordered"]
THINGS = ["a red bicycle", "the old lighthouse", "sourdough bread", "a jazz record", "the garden fence",
          "a tomato plant", "a mountain map", "the kitchen sink", "a chess set", "a silver kettle", "the roof",
          "a violin", "a novel about whales", "the science museum", "a pottery bowl", "a camping tent"]
PLACES = ["in Lisbon", "at the market", "near the river", "with friends", "after work", "at the library",
          "on the weekend", "in the park", "downtown", "at home", "by the harbour", "in the mountains"]


def sentence(rng: random.Random, serial: int) -> str:
    return (f"{rng.choice(NAMES)} {rng.choice(VERBS)} {rng.choice(THINGS)} {rng.choice(PLACES)} "
            f"(note {serial})")


def question(rng: random.Random) -> str:
    return f"What did {rng.choice(NAMES)} do with {rng.choice(THINGS)} {rng.choice(PLACES)}?"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def fill(memory: LongTermMemory, pool: np.ndarray, rng: random.Random, start: int, stop: int) -> float:
    from rich.progress import Progress

    began = time.perf_counter()
    nprng = np.random.default_rng(start)
    with Progress(transient=True) as bar:
        task = bar.add_task(f"filling to {stop:,}", total=stop - start)
        for pos in range(start, stop, 2000):
            n = min(2000, stop - pos)
            a, b = nprng.integers(0, len(pool), n), nprng.integers(0, len(pool), n)
            vecs = pool[a] + 0.5 * pool[b] + nprng.normal(0, 0.02, (n, pool.shape[1]))
            vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
            items = [{"text": sentence(rng, pos + i), "time": f"2024-{1 + (pos + i) % 12:02d}-15 12:00:00",
                      "source": "scale", "tags": ["synthetic"]} for i in range(n)]
            memory.remember_many(items, vectors=vecs)
            bar.update(task, advance=n)
    return time.perf_counter() - began


def hnsw_recall(memory: LongTermMemory, exact: np.ndarray, ids: list[str], queries: np.ndarray, k: int = 20) -> float:
    """Share of the exact top-k (cosine over every stored vector) that the store's HNSW returns,
    for real embeddings of fresh questions (not perturbed copies of stored points, which are too easy)."""
    hits = []
    for q in queries:
        truth = {ids[i] for i in np.argsort(-(exact @ q))[:k]}
        got = {item.id for item, _ in memory.vector_store.query(q, k)}
        hits.append(len(truth & got) / k)
    return statistics.mean(hits)


def hnsw_random(n: int, dim: int = 384, k: int = 20, trials: int = 50) -> dict[str, float]:
    """Recall@k of ours vs Chroma's default HNSW settings on n random unit vectors: the hard case
    (no cluster structure), where the defaults were seen to miss most of the true neighbours."""
    from rich.progress import Progress

    rng = np.random.default_rng(3)
    data = rng.normal(size=(n, dim)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    queries = rng.normal(size=(trials, dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    truth = [set(np.argsort(-(data @ q))[:k].tolist()) for q in queries]
    out = {}
    for label, hnsw in (("ours", DEFAULT_HNSW), ("chroma_default", {"space": "cosine"})):
        folder = Path(tempfile.mkdtemp(prefix="hnsw-"))
        store = ChromaVectorStore.embedded(folder, embedder_signature=f"random:{dim}", hnsw=hnsw)
        try:
            with Progress(transient=True) as bar:
                task = bar.add_task(f"random vectors ({label})", total=n)
                for pos in range(0, n, 5000):
                    chunk = data[pos : pos + 5000]
                    store.add([str(pos + i) for i in range(len(chunk))], chunk, [""] * len(chunk), [{"r": 1}] * len(chunk))
                    bar.update(task, advance=len(chunk))
            got = [{int(item.id) for item, _ in store.query(q, k)} for q in queries]
            out[label] = statistics.mean(len(t & g) / k for t, g in zip(truth, got, strict=True))
        finally:
            store.close()
            shutil.rmtree(folder, ignore_errors=True)
    return out


def measure(memory: LongTermMemory, rng: random.Random, samples: int, serial: int) -> dict:
    start = time.perf_counter()
    memory.query("warm up: what happened at the market?")  # folds the fill into the BM25 index
    rebuild_s = time.perf_counter() - start
    remember_ms, query_ms, vector_ms = [], [], []
    for i in range(samples):
        text = sentence(rng, serial + i)
        t0 = time.perf_counter()
        memory.remember(text, source="bench")
        t1 = time.perf_counter()
        memory.query(question(rng), limit=20)
        t2 = time.perf_counter()
        memory.query(question(rng), limit=20, mode="vector")
        t3 = time.perf_counter()
        remember_ms.append(1000 * (t1 - t0))
        query_ms.append(1000 * (t2 - t1))
        vector_ms.append(1000 * (t3 - t2))
    return {"remember_p50_ms": statistics.median(remember_ms), "remember_p95_ms": pct(remember_ms, 0.95),
            "query_p50_ms": statistics.median(query_ms), "query_p95_ms": pct(query_ms, 0.95),
            "vector_query_p95_ms": pct(vector_ms, 0.95), "first_query_s": rebuild_s}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--chroma-default-hnsw", action="store_true",
                        help="Chroma's own HNSW settings instead of ours (to compare recall against exact)")
    parser.add_argument("--hnsw-random", type=int, metavar="N",
                        help="only compare HNSW recall@20 (ours vs Chroma defaults) on N random vectors")
    parser.add_argument("--dir", type=Path, help="where the temporary store lives (e.g. /dev/shm to leave out the disk)")
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if args.hnsw_random:
        recall = hnsw_random(args.hnsw_random)
        print(f"HNSW recall@20 on {args.hnsw_random:,} random 384-d vectors: "
              + ", ".join(f"{k} {v:.3f}" for k, v in recall.items()))
        if args.json:
            args.json.write_text(json.dumps({"random_vectors": args.hnsw_random, "hnsw_recall@20": recall,
                                             "ours": DEFAULT_HNSW}, indent=2))
        return 0
    rng = random.Random(1)
    embedder = SentenceTransformerEmbedder()
    pool = embedder.embed([sentence(rng, -i) for i in range(1000)])
    folder = Path(tempfile.mkdtemp(prefix="scale-chroma-", dir=args.dir))
    sig = signature(embedder)
    hnsw = {"space": "cosine"} if args.chroma_default_hnsw else DEFAULT_HNSW
    memory = LongTermMemory(embedder, ChromaVectorStore.embedded(folder, embedder_signature=sig, hnsw=hnsw))
    rows, filled = [], 0
    print(f"{'size':>8} {'fill s':>7} {'remember p50':>13} {'query p50':>10} {'query p95':>10} "
          f"{'vector p95':>10} {'HNSW R@20':>10} {'reopen s':>9}")
    try:
        for size in sizes:
            need = max(0, size - len(memory))
            fill_s = fill(memory, pool, rng, filled, filled + need)
            filled += need
            row = {"size": len(memory), "fill_s": fill_s, **measure(memory, rng, args.samples, 10_000_000 + len(memory))}
            exact, ids = _exact_matrix(memory, sorted(memory.ids_by()))
            row["hnsw_recall@20"] = hnsw_recall(memory, exact, ids, embedder.embed([question(rng) for _ in range(50)]))
            memory.close()
            t0 = time.perf_counter()
            memory = LongTermMemory(embedder, ChromaVectorStore.embedded(folder, embedder_signature=sig, hnsw=hnsw))
            row["reopen_s"] = time.perf_counter() - t0
            rows.append(row)
            print(f"{row['size']:>8,} {fill_s:>7.1f} {row['remember_p50_ms']:>10.1f} ms {row['query_p50_ms']:>7.1f} ms "
                  f"{row['query_p95_ms']:>7.1f} ms {row['vector_query_p95_ms']:>7.1f} ms {row['hnsw_recall@20']:>10.3f} "
                  f"{row['reopen_s']:>9.1f}")
    finally:
        memory.close()
        shutil.rmtree(folder, ignore_errors=True)
    growth = rows[-1]["remember_p50_ms"] / rows[0]["remember_p50_ms"]
    print(f"remember p50 growth {rows[0]['size']:,} -> {rows[-1]['size']:,}: {growth:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"embedder": sig, "hnsw": hnsw, "samples": args.samples,
                                         "rows": rows, "remember_growth": growth}, indent=2))
    return 0


def _exact_matrix(memory: LongTermMemory, ids: list[str]) -> tuple[np.ndarray, list[str]]:
    col = memory.vector_store._col  # the bench may look inside: exact search needs every stored vector
    vecs, order = [], []
    for pos in range(0, len(ids), 5000):
        got = col.get(ids=ids[pos : pos + 5000], include=["embeddings"])
        order.extend(got["ids"])
        vecs.append(np.asarray(got["embeddings"], dtype=np.float32))
    return np.concatenate(vecs), order


if __name__ == "__main__":
    raise SystemExit(main())
