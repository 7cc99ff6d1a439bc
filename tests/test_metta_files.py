"""Runs every tests/metta/*.metta assertion file in a bare hyperon runner with lib/ on the include path.

A file passes when every top-level `!` expression (imports and assertions) returns the unit `()`.
hyperon stops a run at the first error, so the count of results must also match the count of `!`s.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mettaclaw.reasoning.interpreted import make_runner
from mettaclaw.reasoning.rulefile import LIB_DIR

METTA_DIR = Path(__file__).parent / "metta"
FILES = sorted(METTA_DIR.glob("*.metta"))
_BANG = re.compile(r"^!\(", re.MULTILINE)


def run_assertions(program: str, working_dir: Path = LIB_DIR) -> list[str]:
    """Failures of one assertion program (empty when it passes)."""
    from hyperon import Environment, MeTTa

    env = Environment.custom_env(working_dir=str(working_dir), include_paths=[str(LIB_DIR)])
    results = MeTTa(env_builder=env).run(program)
    expected = len(_BANG.findall(program))
    failures = [str(r) for r in results if [str(x) for x in r] != ["()"]]
    if len(results) != expected:
        failures.append(f"only {len(results)} of {expected} top-level expressions ran")
    return failures


def test_there_are_assertion_files() -> None:
    assert {p.name for p in FILES} >= {"nal_golden.metta", "pln_golden.metta", "defects.metta", "bad_input.metta"}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_metta_file(path: Path, tmp_path: Path) -> None:
    # a scratch working directory: imports must come from the include path, not from the cwd
    failures = run_assertions(path.read_text(encoding="utf-8"), working_dir=tmp_path)
    assert not failures, "\n".join(failures)


def test_harness_reports_a_failing_assertion(tmp_path: Path) -> None:
    program = "!(import! &self nal)\n!(assertEqual (Truth_Expectation (stv 1.0 0.9)) 0.5)\n!(assertEqual 1 1)\n"
    failures = run_assertions(program, working_dir=tmp_path)
    assert failures and "Expected" in failures[0]
    assert "only 2 of 3" in failures[-1]


def test_import_loads_the_library_file(tmp_path: Path) -> None:
    failures = run_assertions("!(import! &self nal)\n!(assertEqual (collapse (match &self (nal-copula -->) ok)) (ok))\n",
                              working_dir=tmp_path)
    assert not failures, failures


def test_a_folder_named_like_the_library_shadows_it(tmp_path: Path) -> None:
    # hyperon looks in the working directory first: this is why make_runner works from lib/ itself
    (tmp_path / "nal").mkdir()
    (tmp_path / "nal" / "nal.metta").write_text("(decoy)\n")
    failures = run_assertions("!(import! &self nal)\n!(assertEqual (collapse (match &self (nal-copula -->) ok)) (ok))\n",
                              working_dir=tmp_path)
    assert failures


def test_make_runner_ignores_the_process_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "nal").mkdir()
    (tmp_path / "nal" / "nal.metta").write_text("(decoy)\n")
    monkeypatch.chdir(tmp_path)
    out = make_runner(("nal",)).run("!(match &self (nal-copula -->) ok)")
    assert [str(x) for x in out[0]] == ["ok"]


def test_make_runner_imports_both_libraries() -> None:
    metta = make_runner()
    out = metta.run("!(|- ((--> sam human) (stv 1.0 0.9)) ((--> human mortal) (stv 1.0 0.9)))"
                    "!(|~ ((Inheritance a b) (stv 1.0 0.9)) ((Inheritance b c) (stv 1.0 0.9)))")
    assert "(--> sam mortal) (stv 1.0 0.81)" in str(out[0][0])
    assert "(Inheritance a c) (stv 1.0 0.81)" in str(out[1][0])
