"""Turn overhead without the model call, and resident memory over many scripted turns.

    python bench/loop.py [--turns 2000] [--early 200] [--json bench/results/loop.json]
    python bench/loop.py --memories 100000 --turns 300      # real embedder and Chroma, store pre-filled

Each turn runs the whole MeTTa turn on hyperon (prompt, receive, budget, parse, skills, trace) with a
scripted model that answers at once, so the time is the runtime's own overhead. Memory comes from
`open_memory(config)` as in `run.py`: by default in-process (hash embedder, `chromaMode=memory`); with
--memories N the default configuration (MiniLM, embedded Chroma), filled with N memories first
(bench/memory_scale.py's generator).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, percentile, report, rss_mb  # noqa: E402

from mettaclaw.channels import QueueChannel  # noqa: E402
from mettaclaw.config import load_config  # noqa: E402
from mettaclaw.llm import Scripted  # noqa: E402
from mettaclaw.memory import open_memory  # noqa: E402

# remember repeats ten notes (a duplicate refreshes, it does not add), so growth here is leakage, not storage
REPLY = "pin step {i}: keep going\nsend progress report {i}\nremember note number {j}\nquery what did Ada build"


def prefill(memory, count: int) -> None:
    """`count` generated memories written into the index before the first turn."""
    import random

    from memory_scale import fill, vector_pool

    rng = random.Random(1)
    fill(memory, vector_pool(memory, rng), rng, 0, count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--early", type=int, default=200, help="turn count of the first memory reading")
    parser.add_argument("--memories", type=int, default=0, help="pre-fill a real Chroma store with N memories")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    from rich.progress import track

    from mettaclaw.runtime import Agent

    with tempfile.TemporaryDirectory() as tmp:
        settings = [f"memoryDir={tmp}/memory", f"knowledgePriorsDir={tmp}/priors", "sleepInterval=0",
                    f"maxNewInputLoops={args.turns + 10}"]
        if not args.memories:
            settings += ["embeddingprovider=hash", "chromaMode=memory"]
        Path(tmp, "priors").mkdir()
        config = load_config(settings, env={})
        llm = Scripted([REPLY.format(i=i, j=i % 10) for i in range(args.turns)])
        llm.keep_prompts = False
        channel = QueueChannel(["start the long task"])
        memory = open_memory(config)  # as run.py with an offline model: dreams without one
        if args.memories:
            prefill(memory, args.memories)
        agent = Agent(config, llm, channel, memory)
        times: list[float] = []
        rss_early = rss_start = rss_mb()
        for i in track(range(args.turns), description="scripted turns"):
            start = time.perf_counter()
            agent.turn()
            times.append(time.perf_counter() - start)
            channel.sent.clear()
            if i + 1 == args.early:
                rss_early = rss_mb()
        rss_end = rss_mb()
        agent.close()
        memory.close()
    steady = times[args.early :] or times
    payload = {
        "turns": args.turns,
        "memories_prefilled": args.memories,
        "turn_ms_p50": median(steady) * 1000,
        "turn_ms_p95": percentile(steady, 95) * 1000,
        "turn_ms_p50_first_early": median(times[: args.early]) * 1000,
        "rss_mb_start": rss_start,
        f"rss_mb_after_{args.early}": rss_early,
        f"rss_mb_after_{args.turns}": rss_end,
        "rss_growth_ratio": rss_end / rss_early,
    }
    report("turn overhead (no model call) and resident memory", list(payload.items()), args.json, payload)


if __name__ == "__main__":
    main()
