"""Cold start to the end of the first turn: `python run.py` on the real stack (model load included).

    python bench/startup.py [--runs 3] [--json bench/results/startup.json]

Each run is a fresh process on a fresh memory folder with a one-turn scripted model, so the figure
includes imports, loading the embedder, opening Chroma, indexing the knowledge priors and one turn.
A second figure restarts on the same folder (priors unchanged: nothing is re-embedded).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, report  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def one_run(memory_dir: Path, script: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "run.py", "provider=scripted", f"scriptFile={script}", f"memoryDir={memory_dir}",
         "maxTurns=1", "sleepInterval=0"],
        cwd=ROOT, input="hello\n", capture_output=True, text=True, timeout=600,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or "agent> ready" not in proc.stdout:
        raise SystemExit(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    cold, warm = [], []
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.txt"
        script.write_text("send ready\n")
        for i in range(args.runs):
            folder = Path(tmp) / f"m{i}"
            cold.append(one_run(folder, script))
            warm.append(one_run(folder, script))
            print(f"run {i + 1}/{args.runs}: cold {cold[-1]:.2f} s, restart {warm[-1]:.2f} s", flush=True)
    payload = {"runs": args.runs, "cold_start_s_median": median(cold), "restart_s_median": median(warm),
               "cold_start_s_all": cold, "restart_s_all": warm}
    report("start-up to the first turn", [(k, v) for k, v in payload.items() if not k.endswith("_all")], args.json, payload)


if __name__ == "__main__":
    main()
