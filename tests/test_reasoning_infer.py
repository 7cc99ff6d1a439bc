"""Forward chaining: multi-step conclusions, proof trails with memory ids, revision, budgets."""

from __future__ import annotations

from mettaclaw.reasoning import generate
from mettaclaw.reasoning.atoms import parse_belief
from mettaclaw.reasoning.infer import chain, chain_beliefs


def _premises(*pairs: tuple[str, str]) -> list:
    return [(parse_belief(text), mid) for text, mid in pairs]


def _find(result, statement: str):
    hits = [n for n in result.conclusions if n.belief.statement == statement]
    assert hits, f"{statement} not among {[n.belief.statement for n in result.conclusions]}"
    return hits[0]


def test_two_step_chain_with_trail_and_memory_ids() -> None:
    r = chain(_premises(("(--> sam human) (stv 1 0.9)", "m1"), ("(--> human mortal) (stv 1 0.9)", "m2"),
                        ("(--> mortal fragile) (stv 0.8 0.9)", "m3")), depth=2)
    node = _find(r, "(--> sam fragile)")
    assert node.depth == 2
    assert abs(node.belief.f - 0.8) < 1e-9 and abs(node.belief.c - 0.81 * 0.9 * 0.8) < 1e-9
    trail = r.trail(node)
    assert [s["rule"] for s in trail] == ["deduction", "deduction"]
    assert trail[0]["conclusion"] == "(--> sam mortal) (stv 1.0 0.81)"
    first_ids = {p["memory_id"] for p in trail[0]["premises"]}
    assert first_ids == {"m1", "m2"}
    last = trail[-1]["premises"]
    assert [p["derived"] for p in last] == [True, False] and last[1]["memory_id"] == "m3"
    assert node.evidence == {"m1", "m2", "m3"}


def test_depth_one_stops_after_one_round() -> None:
    r = chain(_premises(("(--> sam human) (stv 1 0.9)", "m1"), ("(--> human mortal) (stv 1 0.9)", "m2"),
                        ("(--> mortal fragile) (stv 0.8 0.9)", "m3")), depth=1)
    assert "(--> sam fragile)" not in {n.belief.statement for n in r.conclusions}
    assert r.rounds == 1


def test_conclusions_are_ranked_by_expectation() -> None:
    r = chain_beliefs(generate.knowledge_base(30, seed=3), depth=2)
    exps = [n.expectation for n in r.conclusions]
    assert exps == sorted(exps, reverse=True) and len(exps) > 5
    for n in r.conclusions[:20]:
        assert abs(n.expectation - (n.belief.c * (n.belief.f - 0.5) + 0.5)) < 1e-12


def test_duplicates_from_independent_evidence_are_revised() -> None:
    r = chain(_premises(("(--> a b) (stv 1 0.9)", "m1"), ("(--> b c) (stv 1 0.9)", "m2"),
                        ("(--> a d) (stv 1 0.9)", "m3"), ("(--> d c) (stv 1 0.9)", "m4")), depth=1)
    node = _find(r, "(--> a c)")
    assert node.rule == "revision"
    assert node.belief.c > 0.81  # two independent deductions of (--> a c) at 0.81 each
    assert node.evidence == {"m1", "m2", "m3", "m4"}


def test_the_same_memory_is_not_counted_twice() -> None:
    # identical premises from one memory id: no revision with itself
    same = parse_belief("(--> a b) (stv 1 0.9)")
    r = chain([(same, "m1"), (same, "m1")], depth=2)
    assert r.conclusions == []
    # two memories saying the same thing do revise
    r = chain([(same, "m1"), (same, "m2")], depth=1)
    assert [n.rule for n in r.nodes if n.rule] == ["revision"]


def test_budget_stops_the_chaining_and_says_so() -> None:
    r = chain_beliefs(generate.knowledge_base(60, seed=5), depth=3, max_pairs=50)
    assert r.truncated and r.pairs_tried == 50
    assert "budget reached" in r.render()


def test_nothing_leaks_between_calls() -> None:
    a = chain(_premises(("(--> sam human) (stv 1 0.9)", "m1"), ("(--> human mortal) (stv 1 0.9)", "m2")))
    b = chain(_premises(("(--> tom cat) (stv 1 0.9)", "m9")))
    assert a.conclusions and not b.conclusions
    assert all(n.source in (None, "m9") for n in b.nodes)


def test_pln_statements_chain_with_pln_rules() -> None:
    r = chain(_premises(("(Inheritance cat mammal) (stv 0.9 0.9)", "m1"),
                        ("(Inheritance mammal animal) (stv 1 0.9)", "m2")), depth=1)
    node = _find(r, "(Inheritance cat animal)")
    assert node.rule == "deduction" and abs(node.belief.f - 0.9) < 1e-9


def test_premise_cap() -> None:
    import pytest

    with pytest.raises(ValueError, match="too many premises"):
        chain_beliefs(generate.knowledge_base(201, seed=1))


def test_a_bare_variable_conclusion_never_revises_another_belief() -> None:
    """`(==> $1 $2)` with `(--> a b)` concluded `$2` (c 0.81), which unified with `(--> c d)` (0.2, 0.5)
    and revised it to (0.848, 0.84): one stored "anything implies anything" made every belief near-certain."""
    r = chain(_premises(("(==> $1 $2) (stv 1 0.9)", "m1"), ("(--> a b) (stv 1 0.9)", "m2"),
                        ("(--> c d) (stv 0.2 0.5)", "m3")), depth=3)
    assert all(n.belief.term.__class__ is tuple for n in r.conclusions)
    assert "(--> c d)" not in {n.belief.statement for n in r.conclusions}


def _variable_heavy(n: int) -> list:
    """n beliefs whose large terms hold variables: each pairs with every other through the unifier."""
    def term(v: str) -> str:
        t = v
        for i in range(6):
            t = f"(× {t} {v}{i} $q{i})"
        return t
    return _premises(*((f"(--> {term(f'$x{k}_')} {term(f'$y{k}_')}) (stv 1 0.9)", f"m{k}") for k in range(n)))


def _stepping(step: float):
    """A clock each reading of which is `step` seconds after the last: the test, not the machine's
    speed, decides how long each pair takes."""
    now = [0.0]

    def clock() -> float:
        now[0] += step
        return now[0]

    return clock


def test_a_time_budget_bounds_beliefs_that_pair_with_everything() -> None:
    """60 such beliefs took 94 s within the pair budget, holding the agent's turn and the memory lock.
    At 7 ms a pair, a budget of 0.3 s ends the chaining after 42 pairs, far inside the pair budget."""
    r = chain(_variable_heavy(60), max_seconds=0.3, clock=_stepping(0.007))
    assert r.truncated and r.pairs_tried == 42
    assert "budget reached" in r.render() and "time budget of 0.3 s" in r.render()


def test_infer_skill_stops_at_the_time_budget(monkeypatch) -> None:
    import functools

    from mettaclaw.reasoning import infer
    from mettaclaw.skills import reasoning
    from mettaclaw.skills.reasoning import infer_skill

    monkeypatch.setattr(infer, "MAX_SECONDS", 0.3)
    monkeypatch.setattr(reasoning, "chain", functools.partial(infer.chain, clock=_stepping(0.007)))
    memories = [type("M", (), {"id": mid, "atom": b.text()})() for b, mid in _variable_heavy(60)]
    out = infer_skill("what follows?", lambda query, limit: memories[:limit])
    assert "time budget of 0.3 s" in out


def test_a_belief_with_variables_never_raises_a_facts_confidence() -> None:
    """`(--> $y animal)`, derived from `(--> $y n1)`, revised the stored `(--> cat animal)` up to c 0.93,
    and `(--> cat $x)` given as a question took it to 0.947: revision is for one ground statement."""
    r = chain(_premises(("(--> cat animal) (stv 1 0.9)", "m1"), ("(--> $y n1) (stv 1 0.9)", "m2"),
                        ("(--> n1 animal) (stv 1 0.9)", "m3")), depth=3)
    revisions = [n for n in r.nodes if n.rule == "revision"]
    assert not any(r.nodes[i].belief.has_vars for n in revisions for i in n.parents)
    assert "(--> cat animal)" not in {n.belief.statement for n in r.conclusions}
    r = chain(_premises(("(--> cat animal) (stv 1 0.9)", "m1"), ("(--> cat $x) (stv 1 0.9)", None)), depth=3)
    assert "revision" not in {n.rule for n in r.nodes}
    assert "(--> cat animal)" not in {n.belief.statement for n in r.conclusions}


def test_one_pattern_with_variables_from_two_sources_is_not_revised() -> None:
    r = chain(_premises(("(==> (--> $1 bird) (--> $1 flies)) (stv 1 0.6)", "m1"),
                        ("(==> (--> $1 bird) (--> $1 flies)) (stv 1 0.7)", "m2")), depth=1)
    assert "revision" not in {n.rule for n in r.nodes}
