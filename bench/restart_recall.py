"""Recall right after a restart, over memories of several sentences (as episodes are).

    python bench/restart_recall.py [--rows 3000] [--queries 30] [--json bench/results/restart_recall.json]

Fills a fresh memory folder, opened as `run.py` opens it (default configuration: MiniLM, embedded
Chroma), with `--rows` memories of three sentences each through the index's batch write (the rows
and their sentences embedded, as `remember` does). Then it closes the memory, opens it again and
times `--queries` recalls (`Memory.query`, the `query` skill's ranking) at once, and the same
questions a second time. Recall ranks a long memory by its best sentence, so it needs the sentence
vectors of up to 200 candidates per question; this shows whether they survive the restart.
memory_scale.py's rows have one sentence each and never need them.
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
from memory_scale import NAMES, question, sentence  # noqa: E402

from mettaclaw.config import load_config  # noqa: E402
from mettaclaw.memory import open_memory  # noqa: E402


def fill(memory, rows: int, rng: random.Random) -> None:
    from rich.progress import track

    for start in track(range(0, rows, 64), description=f"writing {rows:,} memories"):
        items = [{"text": f"{rng.choice(NAMES)}: " + " ".join(sentence(rng, start + i + k * rows) + "." for k in range(3)),
                  "time": "2024-05-01 12:00:00", "source": "bench"} for i in range(min(64, rows - start))]
        with memory.lock:
            memory.index.remember_many(items)


def timed(memory, questions: list[str]) -> list[float]:
    out = []
    for q in questions:
        start = time.perf_counter()
        memory.query(q, 10, touch=False)
        out.append(1000 * (time.perf_counter() - start))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "priors").mkdir()
        config = load_config([f"memoryDir={tmp}/memory", f"knowledgePriorsDir={tmp}/priors"], env={})
        memory = open_memory(config)
        fill(memory, args.rows, rng)
        questions = [question(rng) for _ in range(args.queries)]
        before = timed(memory, questions[:5])  # the same process that wrote them, for orientation
        memory.close()
        start = time.perf_counter()
        memory = open_memory(config)
        open_s = time.perf_counter() - start
        first, again = timed(memory, questions), timed(memory, questions)
        memory.close()
    payload = {
        "rows": args.rows, "queries": args.queries, "open_s": open_s,
        "recall_ms_p50_before_restart": median(before),
        "recall_ms_p50_after_restart": median(first), "recall_ms_p95_after_restart": percentile(first, 95),
        "recall_ms_p50_asked_again": median(again), "recall_ms_p95_asked_again": percentile(again, 95),
        "load_average": load_average(),
    }
    report("recall after a restart, memories of three sentences", list(payload.items()), args.json, payload)


if __name__ == "__main__":
    main()
