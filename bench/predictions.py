"""What the PREDICTIONS block costs a turn: its build time against the whole turn, in one run.

    python bench/predictions.py [--observations 100000] [--kinds 500] [--turns 200] [--json PATH]

The agent as `run.py` builds it (default configuration but a scripted model and the hash embedder,
so the turn is the runtime's own work, not a model's) in a fresh folder. The statistics layer is
first fed `--observations` command outcomes over `--kinds` kinds of shell command through the trace
(`Memory.record_turn`, as the agent records them). Then `--turns` turns run, each with a message
naming one of the kinds (so every turn looks for and mostly shows a prediction), and each turn's time
and the time of its PREDICTIONS lookup are measured: the ratio of their medians is the figure.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, percentile, report  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--kinds", type=int, default=500)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from rich.progress import track

    from mettaclaw.channels import QueueChannel
    from mettaclaw.config import load_config
    from mettaclaw.llm import Scripted
    from mettaclaw.memory import open_memory
    from mettaclaw.parser import Command
    from mettaclaw.runtime import Agent

    rng = random.Random(5)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "priors").mkdir()
        config = load_config([f"memoryDir={Path(tmp) / 'memory'}", f"knowledgePriorsDir={Path(tmp) / 'priors'}",
                              "embeddingprovider=hash", "sleepInterval=0", "sessionEndDream=0"], env={})
        memory = open_memory(config, dream=False)
        kinds = [f"job{k}" for k in range(args.kinds)]
        per_turn = 10
        for t in track(range(args.observations // per_turn), description="feeding outcomes"):
            day, hour = t // 400, rng.randrange(24)
            commands = [Command("shell", (f"bash {rng.choice(kinds)}.sh",)) for _ in range(per_turn)]
            outcomes = [(1 if (hour < 6 and rng.random() < 0.8) else 0, rng.uniform(50, 500)) for _ in commands]
            memory.record_turn(f"2026-{1 + day // 28:02d}-{1 + day % 28:02d} {hour:02d}:00:00", [], commands, None, outcomes)
        llm = Scripted(["send ok"] * args.turns)
        channel = QueueChannel()
        agent = Agent(config, llm, channel, memory)
        lookup_ms: list[float] = []
        original = memory.predictions

        def timed_predictions(*a, **kw) -> str:  # the memory's own lookup, timed where the agent calls it
            began = time.perf_counter()
            try:
                return original(*a, **kw)
            finally:
                lookup_ms.append(1000 * (time.perf_counter() - began))

        memory.predictions = timed_predictions  # type: ignore[method-assign]
        turn_ms, shown = [], 0
        for n in track(range(args.turns), description="turns"):
            channel.put(f"please run {kinds[n % len(kinds)]} again")
            began = time.perf_counter()
            agent.turn()
            turn_ms.append(1000 * (time.perf_counter() - began))
            shown += "PREDICTIONS" in llm.prompts[-1][1]
        agent.close()
        memory.close()
    load = os.getloadavg()[0]
    results = {"observations": args.observations, "kinds": args.kinds, "turns": args.turns,
               "turns_with_predictions": shown, "turn_p50_ms": median(turn_ms), "turn_p95_ms": percentile(turn_ms, 95),
               "predictions_p50_ms": median(lookup_ms), "predictions_p95_ms": percentile(lookup_ms, 95),
               "predictions_share_of_turn_p50": median(lookup_ms) / median(turn_ms), "load": load}
    report("PREDICTIONS block per turn", list(results.items()), args.json, results)


if __name__ == "__main__":
    main()
