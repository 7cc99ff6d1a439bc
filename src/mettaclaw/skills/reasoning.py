"""The agent's reasoning skills: `nal`, `pln` and `infer`.

The runtime declares the skills, with their help text, in metta/memory-skills.metta and calls these
functions with the model's argument text.
Errors the model caused (a malformed atom, a truth value out of range, an unknown copula) raise
SkillError with the cause. `infer` keeps its best conclusions (at most KEEP, confidence at least
KEEP_CONFIDENCE, no variables) through the caller's `keep`, which stores them as facts with the
provenance `agent_inference` and their proof trail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mettaclaw.memory import check_query
from mettaclaw.reasoning.atoms import (
    AtomError,
    Belief,
    TooManyBeliefs,
    looks_like_belief,
    parse_belief,
    parse_beliefs,
)
from mettaclaw.reasoning.fast import Conclusion, engine
from mettaclaw.reasoning.infer import MAX_PREMISES, chain
from mettaclaw.reasoning.terms import is_var
from mettaclaw.skills import SkillError
from mettaclaw.skills.registry import Skill, SkillRegistry

RECALL_LIMIT = 60
SHOW_LIMIT = 10
KEEP = 3
KEEP_CONFIDENCE = 0.5
ONE_STEP_READ = 8  # beliefs nal/pln read to say how many were given (they take two)
Keep = Callable[[str, str, list[dict], list[str]], str]  # (statement, belief, trail, premise ids) -> record id


def format_conclusions(conclusions: list[Conclusion]) -> str:
    """One line per conclusion: ``[rule] STATEMENT (stv f c)``."""
    return "\n".join(f"[{c.rule}] {c.text()}" for c in conclusions)


def _one_step(lib: str, arg: str) -> str:
    try:
        beliefs = parse_beliefs(arg, limit=ONE_STEP_READ)
    except TooManyBeliefs:
        raise SkillError(f"{lib} takes one or two beliefs, got more than {ONE_STEP_READ}; use infer to chain more") from None
    except AtomError as e:
        raise SkillError(str(e)) from None
    if len(beliefs) > 2:
        raise SkillError(f"{lib} takes one or two beliefs, got {len(beliefs)}; use infer to chain more")
    eng = engine(lib)
    out = eng.derive1(beliefs[0]) if len(beliefs) == 1 else eng.derive2(beliefs[0], beliefs[1])
    if not out:
        op = "|-" if lib == "nal" else "|~"
        why = ("no single-premise rule applies to it" if len(beliefs) == 1 else
               "no rule applies to this pair (unrelated premises, a truth function was undefined, or a "
               "conclusion would be too large)")
        return f"No conclusions from ({op} ...): {why}."
    return format_conclusions(out)


def nal_skill(arg: str) -> str:
    """`(|- P1 P2)` / `(|- P)` through the compiled rules of lib/nal.metta."""
    return _one_step("nal", arg)


def pln_skill(arg: str) -> str:
    """`(|~ P1 P2)` / `(|~ P)` through the compiled rules of lib/pln.metta."""
    return _one_step("pln", arg)


def infer_skill(arg: str, recall: Callable[[str, int], list[Any]], depth: int = 3, keep: Keep | None = None) -> str:
    """Recall atom-bearing memories for a question or beliefs, chain forward, report with proof trails."""
    if not arg or not arg.strip():
        raise SkillError('needs a question or one or more beliefs, e.g. infer "is sam mortal?"')
    try:
        check_query(arg)  # a question is recalled with, as `query` is
    except ValueError as e:
        raise SkillError(str(e)) from None
    premises: list[tuple[Belief, str | None]] = []
    query = arg
    if looks_like_belief(arg):
        try:
            given = parse_beliefs(arg, limit=MAX_PREMISES // 2)
        except AtomError as e:
            raise SkillError(str(e)) from None
        premises = [(b, None) for b in given]
        query = " ".join(sorted({s for b in given for s in _words(b.term)}))
    # Beliefs made only of variables, e.g. (--> $x $y), name nothing to look for: the recall refuses an
    # empty query, so they are reasoned over alone.
    memories = recall(query, RECALL_LIMIT) if query.strip() else []
    skipped = 0
    seen = {b for b, _ in premises}
    for m in memories:
        atom = getattr(m, "atom", None)
        if not atom:
            continue
        try:
            b = parse_belief(atom)
        except AtomError:
            skipped += 1
            continue
        if b in seen:
            continue
        seen.add(b)
        premises.append((b, str(getattr(m, "id", "?"))))
        if len(premises) >= MAX_PREMISES:
            break
    if not premises:
        return ("No atom-bearing memories match this question, so there is nothing to reason over. Store facts "
                "as atoms first, e.g. (remember \"(--> sam human) (stv 1.0 0.9)\").")
    result = chain(premises, depth=depth)
    if skipped:
        result.notes.append(f"({skipped} recalled memories carried malformed atoms and were left out.)")
    if not result.conclusions:
        listed = "; ".join(b.text() for b, _ in premises[:5])
        return f"No conclusions from {len(premises)} beliefs ({listed}{' ...' if len(premises) > 5 else ''})."
    kept: dict[int, str] = {}
    for node in result.conclusions[:KEEP] if keep is not None else ():
        if node.belief.c >= KEEP_CONFIDENCE and not node.belief.has_vars:
            trail = result.trail(node)
            premises = [str(p["memory_id"]) for step in trail for p in step["premises"] if p["memory_id"]]
            try:
                kept[node.index] = keep(node.belief.statement, node.belief.text(), trail, premises)
            except ValueError as e:  # the store refuses what it cannot hold (a fact past its size): shown, not kept
                result.notes.append(f"({node.belief.statement[:60]}{'...' if len(node.belief.statement) > 60 else ''} "
                                    f"was not kept as a fact: {e}.)")
    return result.render(SHOW_LIMIT, kept)


def _words(t: object) -> set[str]:
    if isinstance(t, tuple):
        out: set[str] = set()
        for x in t[1:]:
            out |= _words(x)
        return out
    return set() if is_var(t) else {str(t)}


def register_skills(registry: SkillRegistry) -> None:
    """nal, pln: one inference step on the beliefs given (`infer`, over remembered beliefs, is a memory skill)."""
    registry.add(Skill("nal", "BELIEFS", "NAL inference |- on one or two beliefs: `nal (--> sam human) (stv 1 0.9) "
                       "(--> human mortal) (stv 1 0.9)` gives (--> sam mortal) (stv 1 0.81); nothing is stored",
                       "reason-nal", lambda host: nal_skill, source=__name__))
    registry.add(Skill("pln", "BELIEFS", "PLN inference |~ on one or two beliefs: `pln (Inheritance a b) (stv 1 0.9) "
                       "(Inheritance b c) (stv 1 0.9)`; nothing is stored", "reason-pln", lambda host: pln_skill,
                       source=__name__))

