"""Reasoning speed: the compiled fast path against the interpreted (hyperon) path, in the same run.

Targets (spec, reasoning.md): one two-premise `|-` call p50 <= 10 us, revision <= 10 us, one forward
step over 100 premises (all 4,950 pairs) <= 0.10 s, `infer` over 100 premises at depth 3 p50 <= 300 ms.
The interpreted forward step would take minutes, so it is timed on a random sample of pairs and
scaled (say --full-interpreted to run all 4,950); the same sample checks that both paths agree.

    python bench/reasoning.py [--json out.json] [--calls 3000] [--sample 60]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

from mettaclaw.reasoning import fast, generate, infer
from mettaclaw.reasoning.atoms import parse_belief
from mettaclaw.reasoning.interpreted import Interpreter
from mettaclaw.reasoning.terms import canonical_vars

DEDUCTION = ("(--> sam human) (stv 1 0.9)", "(--> human mortal) (stv 1 0.9)")
REVISION = ("(--> wolf animal) (stv 1 0.45)", "(--> wolf animal) (stv 1 0.45)")


def per_call(fn: Callable[[], object], n: int, warmup: int = 20) -> list[float]:
    """Seconds per call, one timing per call (so p50 is a true median, not a mean)."""
    for _ in range(warmup):
        fn()
    out = []
    clock = time.perf_counter
    for _ in range(n):
        t = clock()
        fn()
        out.append(clock() - t)
    return out


def p50(xs: list[float]) -> float:
    return statistics.median(xs)


def _key(cs: list) -> set:
    return {(repr(canonical_vars(c.term)), round(c.f, 9), round(c.c, 9)) for c in cs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--calls", type=int, default=3000, help="fast-path calls per single-call figure")
    ap.add_argument("--interp-calls", type=int, default=25, help="interpreted calls per single-call figure")
    ap.add_argument("--sample", type=int, default=60, help="interpreted pairs timed for the forward step")
    ap.add_argument("--full-interpreted", action="store_true", help="run all 4,950 pairs interpreted")
    ap.add_argument("--infer-runs", type=int, default=7)
    args = ap.parse_args()
    console = Console(width=150)
    rows: list[dict] = []

    t = time.perf_counter()
    nal = fast.engine("nal")
    fast.engine("pln")
    compile_s = time.perf_counter() - t
    t = time.perf_counter()
    interp = Interpreter()
    runner_s = time.perf_counter() - t

    # ---- single calls
    for name, (a, b), target in (("|- two premises (deduction)", DEDUCTION, 10e-6),
                                 ("|- revision", REVISION, 10e-6)):
        b1, b2 = parse_belief(a), parse_belief(b)
        f = p50(per_call(lambda b1=b1, b2=b2: nal.derive2(b1, b2), args.calls))
        ft = p50(per_call(lambda a=a, b=b: nal.derive2(parse_belief(a), parse_belief(b)), args.calls))
        i = p50(per_call(lambda b1=b1, b2=b2: interp.nal(b1, b2), args.interp_calls, warmup=3))
        assert _key(nal.derive2(b1, b2)) == _key(interp.nal(b1, b2))
        rows.append({"figure": name, "fast_s": f, "fast_with_parsing_s": ft, "interpreted_s": i,
                     "target_s": target, "ratio": i / f, "unit": "p50 per call"})

    # ---- one forward step over 100 premises: all 4,950 pairs
    kb = generate.knowledge_base(100, seed=1)
    pairs = [(kb[i], kb[j]) for i in range(len(kb)) for j in range(i + 1, len(kb))]

    def step() -> int:
        return sum(len(nal.derive2(x, y)) for x, y in pairs)

    step()
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        n_concl = step()
        runs.append(time.perf_counter() - t)
    f_step = p50(runs)
    sample = pairs if args.full_interpreted else random.Random(3).sample(pairs, args.sample)
    t = time.perf_counter()
    for x, y in track(sample, description="interpreted forward-step sample", console=console, transient=True):
        got = interp.nal(x, y)
        assert _key(got) == _key(nal.derive2(x, y)), (x.text(), y.text())
    i_step = (time.perf_counter() - t) / len(sample) * len(pairs)
    rows.append({"figure": f"forward step, 100 premises ({len(pairs)} pairs, {n_concl} conclusions)",
                 "fast_s": f_step, "interpreted_s": i_step, "target_s": 0.10, "ratio": i_step / f_step,
                 "unit": "median of 5 runs",
                 "interpreted_note": "all pairs" if args.full_interpreted else f"scaled from {len(sample)} pairs"})

    # ---- infer: 100 premises, depth 3
    premises = [(b, f"m{k}") for k, b in enumerate(kb)]
    runs = []
    for _ in track(range(args.infer_runs), description="infer runs", console=console, transient=True):
        t = time.perf_counter()
        res = infer.chain(premises, depth=3)
        runs.append(time.perf_counter() - t)
    f_inf = p50(runs)
    per_pair_interp = i_step / len(pairs)
    i_inf = res.pairs_tried * per_pair_interp
    rows.append({"figure": f"infer, 100 premises, depth 3 ({res.pairs_tried} pairs, "
                           f"{len(res.conclusions)} conclusions)",
                 "fast_s": f_inf, "interpreted_s": i_inf, "target_s": 0.30, "ratio": i_inf / f_inf,
                 "unit": f"p50 of {args.infer_runs} runs",
                 "interpreted_note": "estimated: pairs tried x interpreted time per pair"})

    table = Table(title="mettaclaw reasoning: fast (compiled from lib/*.metta) vs interpreted (hyperon)")
    for col in ("figure", "fast", "fast incl. parsing", "interpreted", "ratio", "target", "ok"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["figure"], _fmt(r["fast_s"]), _fmt(r.get("fast_with_parsing_s")),
                      _fmt(r["interpreted_s"]) + (" *" if "interpreted_note" in r else ""),
                      f"{r['ratio']:,.0f}x", "<= " + _fmt(r["target_s"]), "yes" if r["fast_s"] <= r["target_s"] else "NO")
    console.print(table)
    console.print(f"* interpreted forward step {rows[2]['interpreted_note']}; infer {rows[3]['interpreted_note']}.")
    console.print(f"rule compilation (both libraries, once): {_fmt(compile_s)}; "
                  f"interpreted runner start with both libraries: {_fmt(runner_s)}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "compile_s": compile_s, "runner_start_s": runner_s},
                                        indent=2))


def _fmt(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


if __name__ == "__main__":
    main()
