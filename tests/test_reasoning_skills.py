"""The nal, pln and infer skills: text in, text out, errors the model caused raised as SkillError."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from mettaclaw.skills import SkillError
from mettaclaw.skills.reasoning import infer_skill, nal_skill, pln_skill


@dataclass
class Memory:
    id: str
    atom: str | None
    text: str = ""


class Recorder:
    """A recall function over fixed memories that remembers what it was asked."""

    def __init__(self, memories: list[Memory]) -> None:
        self.memories = memories
        self.calls: list[tuple[str, int]] = []

    def __call__(self, query: str, limit: int) -> list[Memory]:
        self.calls.append((query, limit))
        return self.memories[:limit]


FACTS = [Memory("m1", "(--> sam human) (stv 1 0.9)"), Memory("m2", "(--> human mortal) (stv 1 0.9)"),
         Memory("m3", None, "sam likes tea"), Memory("m4", "(--> broken (stv 1 0.9)")]


def test_nal_skill_lists_conclusions_with_rules() -> None:
    out = nal_skill("(--> sam human) (stv 1 0.9) (--> human mortal) (stv 1 0.9)")
    assert out.splitlines() == ["[deduction] (--> sam mortal) (stv 1.0 0.81)",
                                "[exemplification] (--> mortal sam) (stv 1.0 0.447514)"]
    assert nal_skill("((<-> a b) (stv 0.8 0.9))") == "[similarity-symmetry] (<-> b a) (stv 0.8 0.81)"


def test_pln_skill() -> None:
    out = pln_skill("(Inheritance a b) (stv 1 0.9) (Inheritance b c) (stv 1 0.9)")
    assert out == "[deduction] (Inheritance a c) (stv 1.0 0.81)"


def test_no_conclusion_is_a_clear_message_not_an_error() -> None:
    out = nal_skill("(--> a b) (stv 1 0.9) (--> c d) (stv 1 0.9)")
    assert out.startswith("No conclusions") and "ERROR" not in out


@pytest.mark.parametrize(("arg", "cause"), [
    ("(--> a b) (stv 1 1.5)", "confidence"),
    ("(--> a b (stv 1 0.9)", "malformed"),
    ("(isa a b) (stv 1 0.9)", "unknown copula"),
    ("(--> a b)", "no truth value"),
    ("", "no belief"),
    ("(--> a b) (stv 1 0.9) (--> b c) (stv 1 0.9) (--> c d) (stv 1 0.9)", "one or two beliefs"),
    ("(--> a (× " + " ".join(f"x{i}" for i in range(1500)) + ")) (stv 1 0.9)", "too large"),
    (" ".join(f"(--> a{i} b) (stv 1 0.9)" for i in range(9)), "takes one or two beliefs, got more than 8"),
], ids=lambda v: v if len(v) < 30 else v[:27] + "...")
@pytest.mark.parametrize("skill", [nal_skill, pln_skill], ids=["nal", "pln"])
def test_bad_input_raises_a_skill_error_naming_the_cause(skill, arg: str, cause: str) -> None:
    with pytest.raises(SkillError, match=re.escape(cause)) as err:
        skill(arg)
    assert "Traceback" not in str(err.value) and "(Error" not in str(err.value)


def test_infer_from_a_question_uses_only_atom_bearing_memories() -> None:
    recall = Recorder(FACTS)
    out = infer_skill("is sam mortal?", recall)
    assert recall.calls and recall.calls[0][0] == "is sam mortal?"
    assert "1. (--> sam mortal) (stv 1.0 0.81)" in out
    assert "[memory m1]" in out and "[memory m2]" in out
    assert "malformed atoms" in out and "nothing was stored" in out
    assert "m3" not in out


def test_infer_from_beliefs_recalls_by_their_terms() -> None:
    recall = Recorder(FACTS[1:2])
    out = infer_skill("(--> sam human) (stv 1 0.9)", recall)
    assert set(recall.calls[0][0].split()) == {"human", "sam"}
    assert "(--> sam mortal) (stv 1.0 0.81)" in out and "[given]" in out


def test_infer_without_atoms_explains_what_to_do() -> None:
    out = infer_skill("anything?", Recorder([Memory("m3", None, "text only")]))
    assert out.startswith("No atom-bearing memories") and "remember" in out


def test_infer_errors() -> None:
    with pytest.raises(SkillError, match="needs a question"):
        infer_skill("", Recorder(FACTS))
    with pytest.raises(SkillError, match="^frequency"):
        infer_skill("(--> a b) (stv 2 0.9)", Recorder(FACTS))
    with pytest.raises(SkillError, match="30,000 characters long"):
        infer_skill("x" * 30_000, Recorder(FACTS))  # a question is a query, with its limit


def test_infer_does_not_store_anything() -> None:
    class NoWrites(Recorder):
        def __getattr__(self, name: str):  # any store-like call would land here
            raise AssertionError(f"infer touched {name}")

    infer_skill("is sam mortal?", NoWrites(FACTS))


def test_a_confidence_just_under_one_is_stored_as_one_the_skills_take_back() -> None:
    """(stv 1 0.9999999) was written as (stv 1.0 1.0), which nal and infer then refused as certainty."""
    from mettaclaw.reasoning.atoms import parse_belief

    stored = parse_belief("(--> x y) (stv 1 0.9999999)").text()
    assert stored == "(--> x y) (stv 1.0 0.999999)"
    assert parse_belief(stored).c == 0.999999
    assert "(--> x z)" in nal_skill(f"{stored} (--> y z) (stv 1.0 0.9)")


def test_infer_from_beliefs_of_variables_only_does_not_recall_with_an_empty_query() -> None:
    """`infer (--> $x $y) (stv 1 0.9)` names no term to recall by: it asked the memory for "", which the
    long-term index refuses (ValueError), and the model saw an internal error."""

    def recall(query: str, limit: int) -> list[Memory]:
        if not query.strip():
            raise ValueError("cannot query with an empty text")
        return FACTS[:limit]

    out = infer_skill("(--> $x $y) (stv 1 0.9)", recall)
    assert out == "No conclusions from 1 beliefs ((--> $x $y) (stv 1.0 0.9))."


def test_a_conclusion_the_store_refuses_is_shown_and_not_kept() -> None:
    """A conclusion past the store's size (a fact holds at most 4000 characters) made `keep` raise
    ValueError: the model saw an internal error instead of the conclusions, and not why."""
    big = "s" * 5000
    stored: list[str] = []

    def keep(statement: str, belief: str, trail: list[dict], premises: list[str]) -> str:
        if len(statement) > 4000:
            raise ValueError(f"content is {len(statement)} chars; a fact holds at most 4000 (split it)")
        stored.append(statement)
        return f"f{len(stored)}"

    out = infer_skill(f"(--> {big} b) (stv 1 0.9) (--> b c) (stv 1 0.9) (--> c d) (stv 1 0.9)", Recorder([]),
                      keep=keep)
    assert f"(--> {big} c) (stv 1.0 0.81)" in out
    assert "was not kept as a fact: content is 5008 chars; a fact holds at most 4000" in out
    assert stored == ["(--> b d)"] and "[kept as fact f1]" in out


def test_infer_with_a_pattern_does_not_keep_the_recalled_fact_at_a_higher_confidence() -> None:
    """`infer (--> cat $x) (stv 1 0.9)` over `(--> cat animal) (stv 1 0.9)` kept that fact as a new one at
    c 0.947, the question's own truth value counted as evidence."""
    kept: list[str] = []

    def keep(statement: str, belief: str, trail: list[dict], premises: list[str]) -> str:
        kept.append(belief)
        return f"fact-{len(kept)}"

    out = infer_skill("(--> cat $x) (stv 1 0.9)", Recorder([Memory("m1", "(--> cat animal) (stv 1 0.9)")]),
                      keep=keep)
    assert "revision" not in out
    assert not any(b.startswith("(--> cat animal)") for b in kept), kept
