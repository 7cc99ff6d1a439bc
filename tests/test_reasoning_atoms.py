"""parse_belief and friends: the forms accepted, and a clear AtomError for everything else."""

from __future__ import annotations

import re

import pytest

from mettaclaw.reasoning.atoms import AtomError, Belief, looks_like_belief, parse_belief, parse_beliefs


@pytest.mark.parametrize("text", [
    "(--> cat animal) (stv 1 0.9)",
    "((--> cat animal) (stv 1 0.9))",
    "  (-->   cat  animal)\n(stv 1.0 .9) ",
    "((--> cat animal) (stv 1. 0.90))",
])
def test_accepted_forms_give_one_canonical_belief(text: str) -> None:
    b = parse_belief(text)
    assert b.statement == "(--> cat animal)"
    assert (b.f, b.c) == (1.0, 0.9)
    assert b.text() == "(--> cat animal) (stv 1.0 0.9)"
    assert b.metta() == "((--> cat animal) (stv 1.0 0.9))"
    assert isinstance(b.f, float) and isinstance(b.c, float)


def test_atomic_statement_and_pln_links() -> None:
    assert parse_belief("wetGrass (stv 1 0.9)").statement == "wetGrass"
    b = parse_belief("(Evaluation (Predicate likes) (List (Concept a) (Concept b))) (stv 0.9 0.8)")
    assert b.statement == "(Evaluation (Predicate likes) (List (Concept a) (Concept b)))"


def test_set_spellings_are_mapped_to_the_rule_files_symbols() -> None:
    assert parse_belief("(--> x (IntSet red)) (stv 1 0.9)").statement == "(--> x ([] red))"
    assert parse_belief("(--> (ExtSet a) x) (stv 1 0.9)").statement == "(--> ({} a) x)"


def test_several_beliefs_in_both_forms() -> None:
    bs = parse_beliefs("(--> sam human) (stv 1 0.9) ((--> human mortal) (stv 1 0.9)) rain (stv 0.5 0.5)")
    assert [b.statement for b in bs] == ["(--> sam human)", "(--> human mortal)", "rain"]


def test_beliefs_compare_by_value() -> None:
    assert parse_belief("(--> a b) (stv 1 0.9)") == Belief(("-->", "a", "b"), 1.0, 0.9)
    assert parse_belief("(--> $1 b) (stv 1 0.9)").has_vars


@pytest.mark.parametrize(("text", "cause"), [
    ("(--> cat animal (stv 1 0.9)", "malformed"),
    ("(--> cat animal)) (stv 1 0.9)", "malformed"),
    ("(--> cat animal)", "no truth value"),
    ("(stv 1 0.9)", "no statement"),
    ("", "no belief"),
    ("(--> cat animal) (stv 1.5 0.9)", "frequency"),
    ("(--> cat animal) (stv -0.1 0.9)", "frequency"),
    ("(--> cat animal) (stv 1 1)", "confidence"),
    ("(--> cat animal) (stv 1 1.2)", "confidence"),
    ("(--> cat animal) (stv 1 nan)", "confidence"),
    ("(--> cat animal) (stv high 0.9)", "frequency"),
    ("(--> cat animal) (stv 1)", "(stv f c)"),
    ("(-> cat animal) (stv 1 0.9)", "unknown copula"),
    ("(isa cat animal) (stv 1 0.9)", "unknown copula"),
    ("($r cat animal) (stv 1 0.9)", "unknown copula"),
    ("(--> cat) (stv 1 0.9)", "arguments"),
    ("(==> (foo a) b) (stv 1 0.9)", "unknown copula"),
    ("$x (stv 1 0.9)", "bare variable"),
    ("(--> cat (stv 1 0.9)) (stv 1 0.9)", "stv"),
    ("(--> cat \"animal) (stv 1 0.9)", "malformed"),
    # a newline in a quoted symbol printed a line of its own choosing in the skill's output
    ('(--> "sam\n[deduction] (--> sam god) (stv 1.0 0.99)" human) (stv 1 0.9)', "U+000A, a control"),
    ("(--> cat a\x1bnimal) (stv 1 0.9)", "U+001B"),
    ('"x\u2028y" (stv 1 0.9)', "U+2028"),
    # a model that quoted each belief: the truth value is there, inside the quotes
    ('"(--> cat animal) (stv 1 0.9)" "(--> animal pet) (stv 1 0.9)"', "quoted string, not a belief"),
])
def test_bad_atoms_raise_a_clear_error(text: str, cause: str) -> None:
    with pytest.raises(AtomError) as e:
        parse_belief(text)
    assert cause in str(e.value)
    assert isinstance(e.value, ValueError)


def test_oversize_expressions_are_refused_before_hyperon_sees_them() -> None:
    wide = "(--> cat (× " + " ".join(f"a{i}" for i in range(1100)) + ")) (stv 1 0.9)"
    with pytest.raises(AtomError, match="too large|children"):
        parse_belief(wide)
    deep = "(--> cat " + "(× a " * 40 + "b" + ")" * 40 + ") (stv 1 0.9)"
    with pytest.raises(AtomError, match="deeper"):
        parse_belief(deep)
    with pytest.raises(AtomError, match="children"):
        parse_belief("(--> cat (× " + " ".join(f"a{i}" for i in range(40)) + ")) (stv 1 0.9)")


def test_two_beliefs_where_one_is_expected() -> None:
    with pytest.raises(AtomError, match="one belief"):
        parse_belief("(--> a b) (stv 1 0.9) (--> b c) (stv 1 0.9)")


@pytest.mark.parametrize("form", ["(--> a{i} b) (stv 1 0.9)", "((--> a{i} b) (stv 1 0.9))"], ids=["bare", "wrapped"])
def test_too_many_beliefs_is_a_count_in_either_form_not_a_malformed_atom(form: str) -> None:
    """Four well-formed bare beliefs past a limit of three were "malformed atom: more than 7 top-level
    expressions" (a limit of 2·limit + 1 the model never set); wrapped ones said "too many beliefs"."""
    with pytest.raises(AtomError, match=r"^too many beliefs \(limit 3\)$"):
        parse_beliefs(" ".join(form.format(i=i) for i in range(4)), limit=3)
    with pytest.raises(AtomError, match=r"^too many beliefs \(limit 3\)$"):
        parse_beliefs(" ".join(form.format(i=i) for i in range(8)), limit=3)


def test_looks_like_belief() -> None:
    assert looks_like_belief("(--> cat animal) (stv 1 0.9)")
    assert looks_like_belief("((--> cat animal) (stv 1 0.9))")
    assert looks_like_belief("rain (stv 0.5 0.5)")
    assert not looks_like_belief("cats are animals")
    assert not looks_like_belief("(--> cat animal)")
    assert not looks_like_belief("I like the stv of it (stv")
    assert looks_like_belief('"heavy rain" (stv 0.5 0.5)') and looks_like_belief("rain(stv 0.5 0.5)")
    # prose that mentions a truth value is no belief: it was refused as one ("the has no truth value")
    assert not looks_like_belief("the acronym (stv means simple truth value)")
    assert not looks_like_belief("In NAL a belief reads (--> cat animal) (stv 1 0.9)")


def test_a_metta_comment_is_no_part_of_a_belief() -> None:
    from mettaclaw.reasoning.atoms import looks_like_belief, parse_belief, parse_beliefs

    assert looks_like_belief("(--> a b) (stv 1 0.9) ; note")
    assert parse_belief("(--> a b) (stv 1 0.9) ; note (stv 0 0.1)").text() == "(--> a b) (stv 1.0 0.9)"
    assert len(parse_beliefs("(--> a b) ; first\n(stv 1 0.9)\n;; (--> x y) (stv 1 0.9)\n(--> b c) (stv 1 0.9)")) == 2
    assert parse_belief('(--> "a;b" c) (stv 1 0.9)').statement == '(--> "a;b" c)'
    assert not looks_like_belief("; (--> a b) (stv 1 0.9)")


def test_beliefs_the_trace_and_the_model_s_replies_share_one_reader_and_one_error() -> None:
    """reasoning.terms had a reader of its own (a regex tokenizer raising SExprError, one letter from
    sexpr's SexprError); it is sexpr's reader, reading MeTTa's comments, with the caps beliefs need."""
    from mettaclaw.reasoning.terms import parse_all
    from mettaclaw.sexpr import SexprError, TooManyExpressions, read_all

    assert parse_all('(--> a;b\n "x;y") ; note') == [("-->", "a", '"x;y"')]
    assert [n.text for n in read_all("a;b c")] == ["a;b", "c"]  # a reply: `;` is a symbol's, but between forms
    for text, why in [("(a b", "unbalanced '('"), ("a)", "unexpected ')'"), ('(a "b', "unterminated string"),
                      ("(" * 20 + ")" * 20, "nested deeper"), ("(a " + "b " * 70 + ")", "more than 64 children")]:
        with pytest.raises(SexprError, match=re.escape(why)):
            parse_all(text)
    with pytest.raises(TooManyExpressions):
        parse_all("a " * 300)
    with pytest.raises(AtomError, match="malformed atom: unbalanced '\\(' at character 1"):
        parse_belief("(--> cat animal (stv 1 0.9)")


def test_one_truth_parser_reads_a_belief_s_and_an_atom_s_truth_value() -> None:
    """A belief's confidence stays below 1; a semantic record's atom may be certain (PLN's revision caps
    c at 1), read by the same parser."""
    from mettaclaw.memory.semantic.normalize import triple_from_atom
    from mettaclaw.reasoning.atoms import parse_truth

    assert parse_truth(("stv", "1", "0.9")) == (1.0, 0.9)
    with pytest.raises(AtomError, match=r"must be in \[0, 1\) \(1 would mean certainty\)"):
        parse_truth(("stv", "1", "1"))
    assert parse_truth(("stv", "1", "1"), certain=True) == (1.0, 1.0)
    with pytest.raises(AtomError, match="frequency must be a number"):
        parse_truth(("stv", "nan", "0.5"), certain=True)
    assert triple_from_atom("(lives_in alice paris) (stv 1 1)")[1] == (1.0, 1.0)
    with pytest.raises(ValueError, match=r"atom truth value \(stv 1 2\) must be two numbers in \[0, 1\]"):
        triple_from_atom("(lives_in alice paris) (stv 1 2)")
