"""Memory at scale, as the agent opens it: `remember`, recall and restart at growing sizes.

The memory is what `open_memory(config)` gives `run.py` under the default configuration (embedded
Chroma, MiniLM, hybrid ranking, the agent's recall settings), in a fresh folder. It is filled up to
each size with synthetic memories: generated sentences whose vectors are mixtures of real
all-MiniLM-L6-v2 embeddings (embedding 100k texts on a shared 2-core machine would take most of an
hour). Every timed operation is one the agent performs: `remember` embeds and stores one new
sentence; `recall` is the `query` skill's ranking over every tier (`Memory.query`); the plain vector
query over the same store is timed beside it for the ratio. `restart` closes the memory (which keeps
the snapshot of its in-process indexes) and times `open_memory` until the first recall has answered
(the median of `--restarts`).
`1st recall` is the first query after a fill, which (from 20,000 memories) starts folding the new
memories into the BM25 index in a thread; `BM25 fold` is the time until that fold is in place. The
samples are timed after it.
Medians over many samples; the growth figures compare the smallest and largest size in one run.

`remember` is timed over `--remember-samples` writes (1000 by default). It embeds the sentence and
appends the row to the index's journal; Chroma gets the rows in batches of 64 from a flusher thread
(vectorbuffer.py), which runs during the timed writes as it does during a turn. 1000 writes span many
of those batches and whole cycles of Chroma's HNSW sync (every `sync_threshold` = 100 writes,
`chroma.DEFAULT_HNSW`). The remembered rows stay, so each size's `remember` figure covers that size
plus 1000 (1k: 1,000-2,000).

    python bench/memory_scale.py [--sizes 1000,10000,100000] [--samples 100] [--remember-samples 1000]
                                 [--json PATH]
    python bench/memory_scale.py --hnsw-random 100000   # only HNSW recall, ours vs Chroma's defaults
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
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average  # noqa: E402

from mettaclaw.config import load_config  # noqa: E402
from mettaclaw.memory import open_memory  # noqa: E402
from mettaclaw.memory.stores.chroma import DEFAULT_HNSW, ChromaVectorStore  # noqa: E402

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


def vector_pool(memory: Any, rng: random.Random, size: int = 1000) -> np.ndarray:
    """Real embeddings of `size` generated sentences: what `fill` mixes its synthetic vectors from."""
    return np.asarray(memory.embedder.embed([sentence(rng, -i) for i in range(size)]), dtype=np.float32)


def fill(memory: Any, pool: np.ndarray, rng: random.Random, start: int, stop: int) -> float:
    """Synthetic rows written through the memory index's own batch write, with given vectors."""
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
            with memory.lock:
                memory.index.remember_many(items, vectors=vecs)
            bar.update(task, advance=n)
    return time.perf_counter() - began


def hnsw_recall(memory: Any, exact: np.ndarray, ids: list[str], queries: np.ndarray, k: int = 20) -> float:
    """Share of the exact top-k (cosine over every stored vector) that the store's HNSW returns,
    for real embeddings of fresh questions (not perturbed copies of stored points, which are too easy)."""
    hits = []
    for q in queries:
        truth = {ids[i] for i in np.argsort(-(exact @ q))[:k]}
        got = {item.id for item, _ in memory.index.vector_store.query(q, k)}
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


def measure(memory: Any, rng: random.Random, samples: int, remember_samples: int, serial: int) -> dict[str, float]:
    start = time.perf_counter()
    memory.query("warm up: what happened at the market?", touch=False)  # starts folding the fill into BM25
    first_s = time.perf_counter() - start
    with memory.lock:
        memory.index.settle()  # the fold runs in a thread at this size: time the steady state after it
    settle_s = time.perf_counter() - start
    remember_ms, recall_ms, vector_ms = [], [], []
    for i in range(remember_samples):
        t0 = time.perf_counter()
        memory.remember(sentence(rng, serial + i), source="bench")
        remember_ms.append(1000 * (time.perf_counter() - t0))
    for _ in range(samples):
        t1 = time.perf_counter()
        memory.query(question(rng), 10)
        t2 = time.perf_counter()
        memory.index.query(question(rng), limit=10, mode="vector")
        t3 = time.perf_counter()
        recall_ms.append(1000 * (t2 - t1))
        vector_ms.append(1000 * (t3 - t2))
    return {"remember_p50_ms": statistics.median(remember_ms), "remember_p95_ms": pct(remember_ms, 0.95),
            "remember_mean_ms": statistics.fmean(remember_ms),
            "recall_p50_ms": statistics.median(recall_ms), "recall_p95_ms": pct(recall_ms, 0.95),
            "vector_p95_ms": pct(vector_ms, 0.95), "first_recall_s": first_s,
            "bm25_settled_s": settle_s}


def restart(config: Any, memory: Any, times: int) -> tuple[Any, dict[str, Any]]:
    """Close (writing the snapshot), then open as `run.py` does and answer one recall: ready to turn.
    Medians of `times` restarts (one restart on this shared machine varied from 1.1 to 2.4 s at 100k)."""
    runs = []
    for _ in range(times):
        t0 = time.perf_counter()
        memory.close()
        t1 = time.perf_counter()
        memory = open_memory(config)
        t2 = time.perf_counter()
        memory.query("what did Ada build near the river?", 10, touch=False)
        t3 = time.perf_counter()
        runs.append({"close_s": t1 - t0, "open_s": t2 - t1, "restart_ready_s": t3 - t1})
    return memory, {**{k: statistics.median(r[k] for r in runs) for k in runs[0]},
                    "restart_ready_runs_s": [r["restart_ready_s"] for r in runs]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--samples", type=int, default=100, help="recall and vector queries timed at each size")
    parser.add_argument("--remember-samples", type=int, default=1000,
                        help="remembers timed at each size (1000 spans many flushes of 64 rows to Chroma)")
    parser.add_argument("--restarts", type=int, default=3, help="restarts timed at each size (their median)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--hnsw-random", type=int, metavar="N",
                        help="only compare HNSW recall@20 (ours vs Chroma defaults) on N random vectors")
    parser.add_argument("--dir", type=Path, help="where the temporary memory folder lives (e.g. /dev/shm)")
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
    folder = Path(tempfile.mkdtemp(prefix="scale-memory-", dir=args.dir))
    (folder / "priors").mkdir()
    config = load_config([f"memoryDir={folder / 'memory'}", f"knowledgePriorsDir={folder / 'priors'}"], env={})
    memory = open_memory(config)
    rng = random.Random(1)
    pool = vector_pool(memory, rng)
    rows, filled = [], 0
    print(f"{'size':>8} {'fill s':>7} {'remember p50':>13} {'recall p50':>11} {'recall p95':>11} "
          f"{'vector p95':>11} {'HNSW R@20':>10} {'restart s':>10} {'1st recall':>10} {'BM25 fold':>9}  load")
    try:
        for size in sizes:
            need = max(0, size - len(memory.index))
            fill_s = fill(memory, pool, rng, filled, filled + need)
            filled += need
            row: dict[str, Any] = {"size": len(memory.index), "fill_s": fill_s,
                                   **measure(memory, rng, args.samples, args.remember_samples,
                                           10_000_000 + len(memory.index))}
            exact, ids = _exact_matrix(memory, sorted(memory.index.ids_by()))
            queries = memory.embedder.embed([question(rng) for _ in range(50)])
            row["hnsw_recall@20"] = hnsw_recall(memory, exact, ids, np.asarray(queries, dtype=np.float32))
            memory, timings = restart(config, memory, args.restarts)
            row.update(timings, load=load_average())
            rows.append(row)
            print(f"{row['size']:>8,} {fill_s:>7.1f} {row['remember_p50_ms']:>10.1f} ms {row['recall_p50_ms']:>8.1f} ms "
                  f"{row['recall_p95_ms']:>8.1f} ms {row['vector_p95_ms']:>8.1f} ms {row['hnsw_recall@20']:>10.3f} "
                  f"{row['restart_ready_s']:>10.2f} {row['first_recall_s']:>8.2f} s {row['bm25_settled_s']:>7.2f} s  {row['load']}")
    finally:
        memory.close()
        shutil.rmtree(folder, ignore_errors=True)
    first, last = rows[0], rows[-1]
    growth = {"remember_p50": last["remember_p50_ms"] / first["remember_p50_ms"],
              "recall_p95": last["recall_p95_ms"] / first["recall_p95_ms"]}
    print(f"{first['size']:,} -> {last['size']:,}: remember p50 x{growth['remember_p50']:.2f} (target <= 1.5), "
          f"recall p95 x{growth['recall_p95']:.2f} (target <= 2); restart ready at {last['size']:,}: "
          f"{last['restart_ready_s']:.2f} s (target <= 2); recall p95 / vector p95 at {last['size']:,}: "
          f"{last['recall_p95_ms'] / last['vector_p95_ms']:.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"embedder": config.embeddingprovider, "hnsw": DEFAULT_HNSW,
                                         "samples": args.samples, "remember_samples": args.remember_samples, "rows": rows, "growth": growth}, indent=2))
    return 0


def _exact_matrix(memory: Any, ids: list[str]) -> tuple[np.ndarray, list[str]]:
    store = memory.index.vector_store
    store.flush()  # the rows still waiting in the write-behind buffer (vectorbuffer.py) go to Chroma first
    col = store.index._col  # the bench may look inside: exact search needs every stored vector
    vecs, order = [], []
    for pos in range(0, len(ids), 5000):
        got = col.get(ids=ids[pos : pos + 5000], include=["embeddings"])
        order.extend(got["ids"])
        vecs.append(np.asarray(got["embeddings"], dtype=np.float32))
    return np.concatenate(vecs), order


if __name__ == "__main__":
    raise SystemExit(main())
