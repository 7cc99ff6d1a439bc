"""ONA (OpenNARS for Applications) as an independent oracle for the NAL truth functions.

The `ona` package's NAR binary gets each premise pair in Narsese (with `*reset` between pairs) and
prints what it derives; for every conclusion about atomic terms that both systems produce, the truth
values must agree to ONA's printed precision.  Skipped when the binary is not installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from mettaclaw.reasoning import fast
from mettaclaw.reasoning.atoms import Belief

NAR = shutil.which("NAR")
pytestmark = pytest.mark.skipif(NAR is None, reason="ona's NAR binary is not installed (pip install ona)")

_LINE = re.compile(r"^(Derived|Revised): <(\w+) (-->|<->|==>) (\w+)>\. .*frequency=([\d.]+), confidence=([\d.]+)")


def _pairs() -> list[tuple[Belief, Belief]]:
    # Similarity only as (<-> S M) next to a belief about M: ONA applies analogy to that orientation
    # directly and to the others through a converted similarity (one more step, lower confidence).
    shapes = [(("-->", "a", "b"), ("-->", "b", "c")), (("-->", "a", "b"), ("-->", "a", "c")),
              (("-->", "a", "c"), ("-->", "b", "c")), (("-->", "b", "c"), ("-->", "a", "b")),
              (("-->", "a", "b"), ("-->", "a", "b")), (("<->", "a", "b"), ("-->", "b", "c")),
              (("<->", "a", "b"), ("-->", "c", "b"))]
    truths = [(1.0, 0.9), (0.8, 0.9), (0.7, 0.8), (0.25, 0.4), (1.0, 0.45), (0.6, 0.7)]
    out = []
    for k in range(4):
        for i, (s1, s2) in enumerate(shapes):
            t1, t2 = truths[(i + k) % len(truths)], truths[(i + 2 * k + 1) % len(truths)]
            out.append((Belief(s1, *t1), Belief(s2, *t2)))
    return out


def _narsese(b: Belief) -> str:
    _, s, p = b.term  # type: ignore[misc]
    return f"<{s} {b.term[0]} {p}>. {{{b.f} {b.c}}}"


def _ona(pairs: list[tuple[Belief, Belief]]) -> list[dict[tuple, list[tuple[float, float]]]]:
    script = "".join(f"{_narsese(x)}\n{_narsese(y)}\n*reset\n" for x, y in pairs)
    out = subprocess.run([NAR, "shell"], input=script, capture_output=True, text=True, timeout=120).stdout
    results: list[dict[tuple, list[tuple[float, float]]]] = [{}]
    inputs = 0
    for line in out.splitlines():
        if line.startswith("Input:"):
            inputs += 1
            if inputs > 2 and inputs % 2 == 1:
                results.append({})
        m = _LINE.match(line)
        if m:
            key = (m.group(3), m.group(2), m.group(4))
            results[-1].setdefault(key, []).append((float(m.group(5)), float(m.group(6))))
    assert len(results) == len(pairs), "could not split ONA's output per pair"
    return results


def test_truth_values_agree_with_ona_where_both_conclude() -> None:
    # ONA also derives from its own intermediate results (e.g. the converted similarity), so a
    # statement may carry several truth values there; ours must be one of them.
    pairs = _pairs()
    compared = 0
    rules = set()
    for (x, y), theirs in zip(pairs, _ona(pairs), strict=True):
        for c in fast.nal(x, y):
            if c.term in theirs:
                ok = any(abs(c.f - f) <= 2e-6 and abs(c.c - conf) <= 2e-6 for f, conf in theirs[c.term])
                assert ok, (x.text(), y.text(), c, theirs[c.term])
                compared += 1
                rules.add(c.rule)
    assert compared >= 15
    assert {"deduction", "induction", "abduction", "exemplification", "revision", "analogy"} <= rules, rules
