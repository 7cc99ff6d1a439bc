"""What the PREDICTIONS block costs a turn: its build time against the whole turn, in one run.

    python bench/predictions.py [--observations 100000] [--kinds 500] [--requests 3000] [--turns 200] [--json PATH]

The agent as `run.py` builds it (default configuration but a scripted model and the hash embedder,
so the turn is the runtime's own work, not a model's) in a fresh folder. The statistics layer is
first fed `--observations` command outcomes over `--kinds` kinds of shell command through the trace
(`Memory.record_turn`, as the agent records them), then `--requests` turns of one request each ("please
run the nightly job for ..."), answered by one of the kinds: the episodes the lookup by meaning reads.
Then `--turns` turns run, each with a message naming one of the kinds in a request's words (so every
turn looks for and mostly shows a prediction), and each turn's time and the time of its PREDICTIONS
lookup are measured, in wall and CPU time (the CPU time is what a busy machine changes least), with
the part of the lookup that finds earlier requests by meaning apart.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, percentile, report  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--kinds", type=int, default=500)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from rich.progress import track

    from mettaclaw.channels import QueueChannel
    from mettaclaw.config import load_config
    from mettaclaw.llm import Scripted
    from mettaclaw.memory import open_memory
    from mettaclaw.messages import Message
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
        things = ["photos", "invoices", "mail archive", "build cache", "database", "website", "laptop", "logs"]
        for t in track(range(args.requests), description="feeding requests"):
            job = rng.choice(kinds)
            request = f"please run the {job} job for the {rng.choice(things)} now"
            memory.record_turn(f"2027-01-{1 + t // 400 % 28:02d} {t % 24:02d}:00:00", [Message(request)],
                               [Command("shell", (f"bash {job}.sh",))], None, [(3 if rng.random() < 0.9 else 0, 100.0)])
        llm = Scripted(["send ok"] * args.turns)
        channel = QueueChannel()
        agent = Agent(config, llm, channel, memory)
        spent: dict[str, list[tuple[float, float]]] = {"lookup": [], "by_meaning": []}  # (wall ms, CPU ms) a call

        def timing(name: str, original: Any) -> Any:
            def timed(*a: Any, **kw: Any) -> Any:  # the memory's own lookup, timed where the agent calls it
                began, cpu = time.perf_counter(), time.thread_time()
                try:
                    return original(*a, **kw)
                finally:
                    spent[name].append((1000 * (time.perf_counter() - began), 1000 * (time.thread_time() - cpu)))
            return timed

        memory.predictions = timing("lookup", memory.predictions)  # type: ignore[method-assign]
        memory.precedents.predictions = timing("by_meaning", memory.precedents.predictions)  # type: ignore[method-assign]
        turn_ms, turn_cpu_ms, shown, by_meaning = [], [], 0, 0
        for n in track(range(args.turns), description="turns"):
            channel.put(f"could you run the {kinds[n % len(kinds)]} job again")
            began, cpu = time.perf_counter(), time.thread_time()
            agent.turn()
            turn_ms.append(1000 * (time.perf_counter() - began))
            turn_cpu_ms.append(1000 * (time.thread_time() - cpu))
            shown += "PREDICTIONS" in llm.prompts[-1][1]
            by_meaning += "earlier requests like this one" in llm.prompts[-1][1]
        agent.close()
        memory.close()
    load = os.getloadavg()[0]
    lookup_ms, lookup_cpu = [w for w, _ in spent["lookup"]], [c for _, c in spent["lookup"]]
    meaning_ms, meaning_cpu = [w for w, _ in spent["by_meaning"]], [c for _, c in spent["by_meaning"]]
    results = {"observations": args.observations, "kinds": args.kinds, "requests": args.requests, "turns": args.turns,
               "turns_with_predictions": shown, "turns_with_predictions_by_meaning": by_meaning,
               "turn_p50_ms": median(turn_ms), "turn_p95_ms": percentile(turn_ms, 95),
               "turn_cpu_p50_ms": median(turn_cpu_ms),
               "predictions_p50_ms": median(lookup_ms), "predictions_p95_ms": percentile(lookup_ms, 95),
               "predictions_cpu_p50_ms": median(lookup_cpu),
               "by_meaning_p50_ms": median(meaning_ms), "by_meaning_p95_ms": percentile(meaning_ms, 95),
               "by_meaning_cpu_p50_ms": median(meaning_cpu), "by_meaning_cpu_p95_ms": percentile(meaning_cpu, 95),
               "predictions_share_of_turn_p50": median(lookup_ms) / median(turn_ms), "load": load}
    report("PREDICTIONS block per turn", list(results.items()), args.json, results)


if __name__ == "__main__":
    main()
