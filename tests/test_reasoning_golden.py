"""Every golden value of the spec, to 1e-6, on the fast path and on the interpreted (hyperon) path."""

from __future__ import annotations

import pytest
from test_reasoning_cases import EXACT, GOLDEN

from mettaclaw.reasoning import fast
from mettaclaw.reasoning.interpreted import Interpreter
from mettaclaw.reasoning.terms import render

IDS = [f"{i}-{g[0]}-{g[1][:24]}" for i, g in enumerate(GOLDEN)]


@pytest.fixture(scope="module")
def interp() -> Interpreter:
    return Interpreter()


def _check(conclusions: list, expected: list, exact: bool) -> None:
    got = {(render(c.term), c.f, c.c) for c in conclusions}
    for stmt, f, c in expected:
        hits = [(s, gf, gc) for s, gf, gc in got if s == stmt and abs(gf - f) <= 1e-6 and abs(gc - c) <= 1e-6]
        assert hits, f"{stmt} ({f}, {c}) not among {sorted(got)}"
    if exact:
        assert len(got) == len(expected), f"extra conclusions: {sorted(got)}"


@pytest.mark.parametrize("case", range(len(GOLDEN)), ids=IDS)
def test_golden_fast(case: int) -> None:
    logic, p1, p2, expected = GOLDEN[case]
    _check(getattr(fast, logic)(p1, p2), expected, case in EXACT)
    _check(getattr(fast, logic)(p2, p1), expected, case in EXACT)  # both premise orders


@pytest.mark.parametrize("case", range(len(GOLDEN)), ids=IDS)
def test_golden_interpreted(case: int, interp: Interpreter) -> None:
    logic, p1, p2, expected = GOLDEN[case]
    _check(interp.derive(logic, p1, p2), expected, case in EXACT)


def test_expectation_golden() -> None:
    assert abs(fast.expectation(0.9, 0.81) - 0.824) <= 1e-9


def test_deduction_rule_names_are_reported() -> None:
    rules = {c.rule for c in fast.nal("(--> sam human) (stv 1 0.9)", "(--> human mortal) (stv 1 0.9)")}
    assert rules == {"deduction", "exemplification"}
