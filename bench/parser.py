"""Reply parsing time per KB, from 1 KB to 1 MB, for the shapes that made it quadratic.

    python bench/parser.py [--max-kb 1024] [--json PATH]

Each shape is a model reply of many short lines: an unclosed `(` on the first line, an unclosed `"`
on the first line, a quote opened on every line, and plain commands. Linear parsing means the
milliseconds per KB stay flat as the reply grows (a quadratic parser took 21 s for 8 KB).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, median, report  # noqa: E402

from mettaclaw.parser import parse_reply  # noqa: E402

LINE = "the quick brown fox jumps over the lazy dog again\n"  # 50 bytes

SHAPES = {
    "unclosed (": lambda n: "(send " + LINE * n,
    'unclosed "': lambda n: 'send "' + LINE * n,
    'a " on every line': lambda n: ('send "' + LINE) * n,
    "plain commands": lambda n: ("send " + LINE) * n,
}


def time_parse(reply: str, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        parse_reply(reply, max_commands=5)
        times.append(time.perf_counter() - start)
    return median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-kb", type=int, default=1024)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    sizes = [kb for kb in (1, 4, 16, 64, 256, 1024) if kb <= args.max_kb]
    rows, payload = [], {"load": load_average(), "ms_per_kb": {}}
    for shape, make in SHAPES.items():
        per_kb = {}
        for kb in sizes:
            reply = make(kb * 1024 // len(LINE))
            seconds = time_parse(reply, repeats=5 if kb <= 64 else 1)
            per_kb[kb] = 1000 * seconds / (len(reply) / 1024)
            rows.append((f"{shape}, {kb} KB: ms per KB", per_kb[kb]))
        growth = per_kb[sizes[-1]] / per_kb[sizes[0]]
        rows.append((f"{shape}: ms per KB at {sizes[-1]} KB / at {sizes[0]} KB", growth))
        payload["ms_per_kb"][shape] = {**per_kb, "growth": growth}
    rows.append(("load average", payload["load"]))
    report("reply parsing time per KB (flat = linear)", rows, args.json, payload)


if __name__ == "__main__":
    main()
