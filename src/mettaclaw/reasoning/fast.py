"""The fast path: `|-` and `|~` from rules compiled once out of lib/nal.metta and lib/pln.metta.

Same semantics as the MeTTa definitions of `|-`/`|~`: every rule matching (P1, P2) or (P2, P1),
conclusions deduplicated, tautologies (X copula X) and bare-variable "statements" dropped, a truth
function that hits ``(empty)`` or a zero denominator gives no conclusion.  Rules are indexed by premise shape, so a call tries only the
rules that can match; ground premises use the specialised matchers, premises with variables the
general unifier.  A rule the library declares ``same-statement`` (revision) takes two premises about
one statement without variables: a pattern is a question, and unified with a belief it would count that
belief's evidence twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple

from .atoms import Belief, parse_belief
from .compiler import CompiledRule, NoConclusion, compile_ruleset
from .rulefile import RuleSet, load_ruleset
from .terms import RVar, Term, compatible, is_var, render

_FAIL = (NoConclusion, ZeroDivisionError, OverflowError)
# Entries of each candidate-rule cache. A shape names the heads of a statement's arguments, which are any
# symbols (`(--> (h1 s) (g1 s))`), so unbounded caches grow with every new head the agent sees and no
# later call frees them (docs/decisions/0016). Past the bound a cache starts over.
MAX_CACHED_SHAPES = 4096


class Conclusion(NamedTuple):
    """One derived belief and the rule that produced it."""

    rule: str
    term: Term
    f: float
    c: float
    swapped: bool = False  # True when the second premise given matched the rule's first premise
    ground: bool = False  # from ground premises, hence ground itself (the compiler checks rules bind all)

    @property
    def statement(self) -> str:
        return render(self.term)

    def text(self) -> str:
        return self.belief().text()

    def belief(self) -> Belief:
        b = Belief(self.term, self.f, self.c)
        if self.ground:
            b.__dict__["has_vars"] = False  # pre-fills the cached property; saves a walk per conclusion
        return b


class Engine:
    """Compiled rules of one library, with a cache of candidate rules per pair of premise shapes."""

    def __init__(self, rs: RuleSet) -> None:
        self.ruleset = rs
        self.rules2, self.rules1, self.functions, self.source = compile_ruleset(rs)
        self.copulas = frozenset(rs.copulas)
        self.same_statement = frozenset(rs.same_statement)
        self._cands2: dict[tuple[Any, Any], list[tuple[CompiledRule, bool]]] = {}
        self._cands1: dict[Any, list[CompiledRule]] = {}
        self._revision: CompiledRule | None = None
        # Every two-premise rule whose premises share a variable needs premises sharing a symbol;
        # infer relies on this to skip unrelated pairs, so it is checked here, on the actual rules.
        self.premises_share_symbols = all(_vars(cr.rule.premises[0][0]) & _vars(cr.rule.premises[1][0])
                                          for cr in self.rules2)
        expectation = [n for n in self.functions if n.endswith("_Expectation")]
        self._expectation: Callable[[tuple[float, float]], float] | None = (
            self.functions[expectation[0]] if expectation else None)

    # ---- public
    def derive2(self, b1: Belief, b2: Belief) -> list[Conclusion]:
        """All conclusions of (b1, b2) in both orders, deduplicated and without tautologies."""
        s1, s2 = b1.term, b2.term
        t1, t2 = (b1.f, b1.c), (b2.f, b2.c)
        k = (b1.shape, b2.shape)
        cands = self._cands2.get(k)
        if cands is None:
            if len(self._cands2) >= MAX_CACHED_SHAPES:
                self._cands2.clear()
            cands = self._cands2[k] = self._candidates2(*k)
        out: list[Conclusion] = []
        seen: set[tuple[Term, tuple[float, float]]] = set()
        ground = not (b1.has_vars or b2.has_vars)
        for cr, swapped in cands:
            if cr.rule.name in self.same_statement and (not ground or s1 != s2):
                continue
            try:
                if ground:
                    r = cr.ground(s2, t2, s1, t1) if swapped else cr.ground(s1, t1, s2, t2)
                else:
                    r = _unify_rule(cr, ((s2, t2), (s1, t1)) if swapped else ((s1, t1), (s2, t2)))
            except _FAIL:
                continue
            if r is not None:
                self._emit(cr, r, seen, out, swapped, ground)
        return out

    def derive1(self, b: Belief) -> list[Conclusion]:
        """All single-premise conclusions of b."""
        k = b.shape
        cands = self._cands1.get(k)
        if cands is None:
            if len(self._cands1) >= MAX_CACHED_SHAPES:
                self._cands1.clear()
            cands = self._cands1[k] = [cr for cr in self.rules1 if compatible(cr.keys[0], k)]
        out: list[Conclusion] = []
        seen: set[tuple[Term, tuple[float, float]]] = set()
        ground = not b.has_vars
        t = (b.f, b.c)
        for cr in cands:
            try:
                r = cr.ground(b.term, t) if ground else _unify_rule(cr, ((b.term, t),))
            except _FAIL:
                continue
            if r is not None:
                self._emit(cr, r, seen, out, False, ground)
        return out

    def expectation(self, f: float, c: float) -> float:
        """Expectation as the library defines it (``*_Expectation``)."""
        if self._expectation is None:
            raise LookupError(f"{self.ruleset.path.name} defines no expectation function")
        return float(self._expectation((f, c)))

    def revise(self, b1: Belief, b2: Belief) -> Belief | None:
        """Revision of two beliefs about one ground statement, by the library's rule named ``revision``;
        None for statements with variables, which are patterns, not evidence about one statement."""
        if b1.has_vars or b2.has_vars:
            return None
        if self._revision is None:
            found = [cr for cr in self.rules2 if cr.rule.name == "revision"]
            if not found:
                raise LookupError(f"{self.ruleset.path.name} defines no revision rule")
            self._revision = found[0]
        try:
            r = self._revision.ground(b1.term, (b1.f, b1.c), b2.term, (b2.f, b2.c))
        except _FAIL:
            return None
        if r is None:
            return None
        return Belief(r[0], float(r[1][0]), float(r[1][1]))

    # ---- internals
    def _emit(self, cr: CompiledRule, r: tuple[Term, tuple[float, float]], seen: set, out: list,
              swapped: bool, ground: bool) -> None:
        stmt, tv = r
        # A bare variable (`$2` from `(==> $1 $2)` and any belief) is no statement: parse_belief refuses
        # it, hyperon's own run of the rules gives nothing there, and in infer it would unify with, and
        # revise, every other belief.
        if is_var(stmt):
            return
        if (stmt.__class__ is tuple and len(stmt) == 3 and stmt[1] == stmt[2]
                and stmt[0] in self.copulas):
            return
        key = (stmt, tv)
        if key in seen:
            return
        seen.add(key)
        out.append(Conclusion(cr.rule.name, stmt, float(tv[0]), float(tv[1]), swapped, ground))

    def _candidates2(self, k1: Any, k2: Any) -> list[tuple[CompiledRule, bool]]:
        fwd = [(cr, False) for cr in self.rules2 if compatible(cr.keys[0], k1) and compatible(cr.keys[1], k2)]
        rev = [(cr, True) for cr in self.rules2 if compatible(cr.keys[0], k2) and compatible(cr.keys[1], k1)]
        return fwd + rev


def _vars(t: Any) -> set[int]:
    if t.__class__ is RVar:
        return {id(t)}
    if t.__class__ is tuple:
        return set().union(*(_vars(x) for x in t)) if t else set()
    return set()


# ---------------------------------------------------------------- general unifier (premises with variables)
# Steps one rule's unification may take. Premise variables bound to terms holding other variables make
# a chain of shared subterms that every walk below expands as a tree, doubling with each more
# variable within the size caps of a belief (docs/decisions/0016). Real premises (at most 400 atoms)
# need a few thousand.
UNIFY_STEPS = 20_000


class _Bindings(dict):
    """A substitution that counts the unifier's steps; past UNIFY_STEPS the rule gives no conclusion."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        super().__init__()
        self.left = UNIFY_STEPS

    def step(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise NoConclusion


def _walk(x: Any, s: dict) -> Any:
    while is_var(x) and x in s:
        x = s[x]
    return x


def _occurs(v: Any, t: Any, s: _Bindings) -> bool:
    s.step()
    t = _walk(t, s)
    if t is v or (t.__class__ is str and t == v):
        return True
    return t.__class__ is tuple and any(_occurs(v, x, s) for x in t)


def _unify(a: Any, b: Any, s: _Bindings) -> bool:
    s.step()
    a, b = _walk(a, s), _walk(b, s)
    if a is b or (a.__class__ is str and b.__class__ is str and a == b):
        return True
    if is_var(a):
        if _occurs(a, b, s):
            return False
        s[a] = b
        return True
    if is_var(b):
        if _occurs(b, a, s):
            return False
        s[b] = a
        return True
    if a.__class__ is tuple and b.__class__ is tuple and len(a) == len(b):
        return all(_unify(x, y, s) for x, y in zip(a, b, strict=True))
    return False


def _resolve(t: Any, s: _Bindings) -> Any:
    s.step()
    t = _walk(t, s)
    if t.__class__ is tuple:
        return tuple(_resolve(x, s) for x in t)
    if t.__class__ is RVar:
        return f"${t.name}"
    return t


def _unify_rule(cr: CompiledRule, premises: tuple) -> tuple[Term, tuple[float, float]] | None:
    s = _Bindings()
    names: dict[str, Any] = {}
    for pat, (term, tv) in zip(cr.rule.premises, premises, strict=True):
        if not _unify(pat[0], term, s):
            return None
        names[pat[1].name] = tv
    if _holds_rule_var(cr.rule.conclusion[0], s):
        return None
    _collect_vars(cr.rule.conclusion, s, names)
    for pat in cr.rule.premises:
        _collect_vars(pat[0], s, names)
    return _resolve(cr.rule.conclusion[0], s), cr.tv(names)


def _holds_rule_var(t: Any, s: _Bindings) -> bool:
    """Whether a conclusion keeps one of the rule's own variables unbound: a premise's variable took a
    pattern of the rule (`$1` in `(--> $1 bird)` became `(× $A $B)`), and the "conclusion"
    `(--> (× bird $B) bird)` says nothing the premises do (nor does `(--> $S a)` from `(--> $x a)`,
    once with f 1 and once with f 0). Premises without variables never get here."""
    s.step()
    t = _walk(t, s)
    if t.__class__ is RVar:
        return True
    return t.__class__ is tuple and any(_holds_rule_var(x, s) for x in t)


def _collect_vars(t: Any, s: _Bindings, names: dict[str, Any]) -> None:
    if t.__class__ is RVar:
        names.setdefault(t.name, _resolve(t, s))
    elif t.__class__ is tuple:
        for x in t:
            _collect_vars(x, s, names)


# ---------------------------------------------------------------- module API
_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def engine(name: str) -> Engine:
    """The compiled engine for ``nal`` or ``pln``, built on first use from lib/<name>.metta."""
    e = _engines.get(name)
    if e is None:
        with _lock:
            e = _engines.get(name)
            if e is None:
                e = _engines[name] = Engine(load_ruleset(name))
    return e


@lru_cache(maxsize=4096)
def _parse_cached(text: str) -> Belief:
    return parse_belief(text)  # Beliefs are immutable, so sharing them is safe; errors are not cached


def _belief(p: Belief | str) -> Belief:
    return p if isinstance(p, Belief) else _parse_cached(p)


def nal(p1: Belief | str, p2: Belief | str | None = None) -> list[Conclusion]:
    """`(|- P1 P2)` or `(|- P)`: NAL conclusions with rule names.  Text input goes through parse_belief."""
    e = engine("nal")
    return e.derive1(_belief(p1)) if p2 is None else e.derive2(_belief(p1), _belief(p2))


def pln(p1: Belief | str, p2: Belief | str | None = None) -> list[Conclusion]:
    """`(|~ P1 P2)` or `(|~ P)`: PLN conclusions with rule names."""
    e = engine("pln")
    return e.derive1(_belief(p1)) if p2 is None else e.derive2(_belief(p1), _belief(p2))


def expectation(f: float, c: float) -> float:
    """NAL expectation c·(f − 0.5) + 0.5, compiled from lib/nal.metta."""
    return engine("nal").expectation(f, c)
