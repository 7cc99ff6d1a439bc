"""The fast path is compiled from the MeTTa files: edit the file and the compiled rules follow."""

from __future__ import annotations

from pathlib import Path

import pytest

from mettaclaw.reasoning.atoms import parse_belief
from mettaclaw.reasoning.compiler import CompileError
from mettaclaw.reasoning.fast import Engine, engine
from mettaclaw.reasoning.rulefile import lib_path, load_ruleset

SAM = parse_belief("(--> sam human) (stv 1 0.9)")
MORTAL = parse_belief("(--> human mortal) (stv 1 0.9)")


def test_rule_counts_come_from_the_files() -> None:
    text = lib_path("nal").read_text(encoding="utf-8")
    e = engine("nal")
    assert len(e.rules2) == text.count("\n(nal-rule ")
    assert len(e.rules1) == text.count("\n(nal-rule1 ")
    assert e.copulas == {"-->", "<->", "==>", "<=>"}
    p = engine("pln")
    assert len(p.rules2) + len(p.rules1) == lib_path("pln").read_text(encoding="utf-8").count("\n(pln-rule")


def test_editing_a_truth_function_in_metta_changes_the_fast_path(tmp_path: Path) -> None:
    text = lib_path("nal").read_text(encoding="utf-8")
    old = "(stv (* $f1 $f2) (* (* $f1 $f2) (* $c1 $c2))))"
    assert old in text
    edited = tmp_path / "nal.metta"
    edited.write_text(text.replace(old, "(stv (* $f1 $f2) (* 0.5 (* $c1 $c2))))"), encoding="utf-8")
    e = Engine(load_ruleset("nal", edited))
    deduction = [c for c in e.derive2(SAM, MORTAL) if c.rule == "deduction"]
    assert deduction and abs(deduction[0].c - 0.405) < 1e-12


def test_removing_a_rule_in_metta_removes_it_from_the_fast_path(tmp_path: Path) -> None:
    lines = lib_path("nal").read_text(encoding="utf-8").splitlines()
    kept = [ln for ln in lines if not ln.startswith("(nal-rule exemplification")]
    edited = tmp_path / "nal.metta"
    edited.write_text("\n".join(kept), encoding="utf-8")
    rules = {c.rule for c in Engine(load_ruleset("nal", edited)).derive2(SAM, MORTAL)}
    assert rules == {"deduction"}


def test_a_construct_the_compiler_does_not_know_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "nal.metta"
    f.write_text("(= (Truth_Odd (stv $f $c)) (stv (sqrt-math $f) $c))\n"
                 "(nal-rule odd ((--> $a $b) $T1) ((--> $b $c) $T2) ((--> $a $c) (Truth_Odd $T1)))\n")
    with pytest.raises(CompileError, match="sqrt-math"):
        Engine(load_ruleset("nal", f))


def test_a_file_without_rules_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "nal.metta"
    f.write_text("(= (x) 1)\n")
    with pytest.raises(ValueError, match="no \\(nal-rule"):
        load_ruleset("nal", f)
