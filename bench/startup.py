"""Cold start to the first turn: `python run.py` on the real stack (model load included).

    python bench/startup.py [--runs 3] [--baseline OTHER_CHECKOUT] [--json bench/results/startup.json]
    python bench/startup.py --memories 100000 [--runs 3]

Each run is a fresh process on a fresh memory folder with a one-turn scripted model, so the figure
includes interpreter start, imports, loading the embedder, opening Chroma, indexing the knowledge
priors and one turn, whose knowledge block embeds with the real model before the reply. The clock
stops when that reply ("agent> ready") reaches stdout; the run still has to exit cleanly, and the
time to exit (shutdown included) is reported too. A second figure restarts on the same folder
(priors unchanged: nothing is re-embedded).

`--memories N` instead restarts `run.py` on a memory folder already holding N memories (filled and
closed once beforehand, in-process, through `open_memory`; bench/memory_scale.py's generator), copied
afresh for every run: the restart a long-lived agent sees, its index snapshot included. Each run also
restarts on an empty folder, interleaved, so the difference is what the N memories cost.

`--baseline` runs another checkout (e.g. `git worktree add /tmp/base HEAD~3`) interleaved with this
one, run for run, so a noisy shared machine slows both alike, and reports the ratio of the medians.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, median, report  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REPLY = "agent> ready"


def one_run(root: Path, memory_dir: Path, script: Path, timeout: float = 600) -> tuple[float, float]:
    """Seconds from launch to the first turn's reply on stdout, and to the process's clean exit."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(root / "src"), os.environ.get("PYTHONPATH")) if p)}
    with tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "run.py", "provider=scripted", f"scriptFile={script}", f"memoryDir={memory_dir}",
             "maxTurns=1", "sleepInterval=0"],
            cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
        )
        watchdog = threading.Timer(timeout, proc.kill)
        watchdog.start()
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("hello\n")
            proc.stdin.close()
            first_turn = None
            for line in proc.stdout:
                if first_turn is None and line.startswith(REPLY):
                    first_turn = time.perf_counter() - start
            code = proc.wait()
            exited = time.perf_counter() - start
        finally:
            watchdog.cancel()
        if code != 0 or first_turn is None:
            err.seek(0)
            raise SystemExit(f"run of {root} failed ({code}, reply seen: {first_turn is not None}): {err.read()[-2000:]}")
    return first_turn, exited


def measure(root: Path, folder: Path, script: Path, into: dict[str, list[float]]) -> str:
    """A cold start on a new folder, then a restart on it; appends to `into` and returns a summary."""
    for phase in ("cold", "restart"):
        first_turn, exited = one_run(root, folder, script)
        into[f"{phase}_s"].append(first_turn)
        into[f"{phase}_exit_s"].append(exited)
    return f"cold {into['cold_s'][-1]:.2f} s (exit {into['cold_exit_s'][-1]:.2f}), restart {into['restart_s'][-1]:.2f} s"


def prefilled(folder: Path, count: int) -> Path:
    """A memory folder holding `count` memories, closed cleanly (so its snapshot is on disk)."""
    import random

    from memory_scale import fill, vector_pool

    from mettaclaw.config import load_config
    from mettaclaw.memory import open_memory

    config = load_config([f"memoryDir={folder}", f"knowledgePriorsDir={ROOT / 'knowledge-priors'}"], env={})
    memory = open_memory(config, dream=False)
    try:
        rng = random.Random(1)
        fill(memory, vector_pool(memory, rng), rng, 0, count)
    finally:
        memory.close()
    return folder


def restarts(runs: int, templates: dict[str, Path], tmp: Path, script: Path) -> dict[str, list[float]]:
    """`run.py` restarted on a fresh copy of each filled folder, interleaved run for run."""
    import shutil

    out: dict[str, list[float]] = {f"{name}_{k}": [] for name in templates for k in ("restart_s", "restart_exit_s")}
    for i in range(runs):
        line = []
        for name, template in templates.items():
            folder = tmp / f"{name}{i}"
            shutil.copytree(template, folder)
            first_turn, exited = one_run(ROOT, folder, script)
            out[f"{name}_restart_s"].append(first_turn)
            out[f"{name}_restart_exit_s"].append(exited)
            line.append(f"{name}: restart {first_turn:.2f} s (exit {exited:.2f})")
            shutil.rmtree(folder, ignore_errors=True)
        print(f"run {i + 1}/{runs}: {'; '.join(line)}; load {load_average()}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout, run interleaved with this one")
    parser.add_argument("--memories", type=int, default=0, help="restart on a folder already holding N memories")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.memories:
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "script.txt"
            script.write_text("send ready\n")
            templates = {"empty": prefilled(Path(tmp) / "empty", 0),
                         "filled": prefilled(Path(tmp) / "filled", args.memories)}
            figures = restarts(args.runs, templates, Path(tmp), script)
        payload = {"runs": args.runs, "memories": args.memories, "load": load_average(),
                   **{f"{k}_median": median(v) for k, v in figures.items()}, **{f"{k}_all": v for k, v in figures.items()}}
        payload["memories_cost_s_median"] = payload["filled_restart_s_median"] - payload["empty_restart_s_median"]
        rows = [(k.removesuffix("_median"), v) for k, v in payload.items() if not k.endswith("_all")]
        report(f"run.py restart to the first turn with {args.memories:,} memories", rows, args.json, payload)
        return
    roots = {"this": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    runs = {name: {k: [] for k in ("cold_s", "cold_exit_s", "restart_s", "restart_exit_s")} for name in roots}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.txt"
        script.write_text("send ready\n")
        for i in range(args.runs):
            for name, root in roots.items():
                line = measure(root, Path(tmp) / f"{name}{i}", script, runs[name])
                print(f"run {i + 1}/{args.runs} {name}: {line}", flush=True)
    payload: dict = {"runs": args.runs}
    for name, figures in runs.items():
        prefix = "" if name == "this" else "baseline_"
        for key, values in figures.items():
            payload[f"{prefix}{key}_median"] = median(values)
            payload[f"{prefix}{key}_all"] = values
    if args.baseline:
        payload["baseline"] = str(args.baseline)
        payload["cold_ratio_this_to_baseline"] = payload["cold_s_median"] / payload["baseline_cold_s_median"]
        payload["restart_ratio_this_to_baseline"] = payload["restart_s_median"] / payload["baseline_restart_s_median"]
    rows = [(k.removesuffix("_median"), v) for k, v in payload.items() if not k.endswith("_all") and k != "baseline"]
    report("start-up to the first turn (seconds to its reply; _exit: to the clean exit)", rows, args.json, payload)


if __name__ == "__main__":
    main()
