"""The interpreted path: `|-` and `|~` evaluated by hyperon from lib/*.metta, as the reference.

Slow (milliseconds a call) but it is the definition the fast path is checked against.  How to load
the libraries in a bare runner (this is what ``make_runner`` does)::

    from hyperon import MeTTa, Environment
    env = Environment.custom_env(working_dir=LIB, include_paths=[LIB])   # LIB = <repo>/lib
    metta = MeTTa(env_builder=env)
    metta.run("!(import! &self nal)")
    metta.run("!(import! &self pln)")
    metta.run("!(|- ((--> sam human) (stv 1.0 0.9)) ((--> human mortal) (stv 1.0 0.9)))")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .atoms import MAX_CHILDREN, MAX_TOKENS, AtomError, Belief, parse_belief
from .fast import Conclusion
from .rulefile import LIB_DIR
from .terms import Term, variables

_OPS = {"nal": ("|-named", "|-"), "pln": ("|~named", "|~")}


class InterpretedError(RuntimeError):
    """hyperon returned something that is not a list of conclusions."""


def make_runner(libs: tuple[str, ...] = ("nal", "pln"), lib_dir: Path = LIB_DIR) -> Any:
    """A fresh hyperon runner with lib/ on the include path and the libraries imported."""
    from hyperon import Environment, MeTTa

    env = Environment.custom_env(working_dir=str(lib_dir), include_paths=[str(lib_dir)])
    metta = MeTTa(env_builder=env)
    for lib in libs:
        result = metta.run(f"!(import! &self {lib})")
        if result != [[_unit()]]:
            raise InterpretedError(f"import of {lib} failed: {result}")
    return metta


def _unit() -> Any:
    from hyperon import E

    return E()


class Interpreter:
    """One runner reused across calls (a fresh runner per call costs ~20 ms more)."""

    def __init__(self, libs: tuple[str, ...] = ("nal", "pln")) -> None:
        self.metta = make_runner(libs)

    def derive(self, lib: str, p1: Belief | str, p2: Belief | str | None = None) -> list[Conclusion]:
        """Conclusions with rule names, from ``(|-named P1 P2)`` / ``(|~named P)``."""
        op = _OPS[lib][0]
        args = _args(p1, p2)
        given = set().union(*(variables(_b(p).term) for p in (p1, p2) if p is not None))
        # as the fast path (fast._holds_rule_var): no conclusion keeps a variable of the rule's own,
        # which hyperon names `$B#2657` (a premise's variables keep their names)
        return [c for c in map(_conclusion, self._run(f"!({op} {args})")) if variables(c.term) <= given]

    def run_plain(self, lib: str, p1: Belief | str, p2: Belief | str | None = None) -> list[tuple[Term, float, float]]:
        """``(|- P1 P2)`` itself: (statement, f, c) triples without rule names."""
        op = _OPS[lib][1]
        args = _args(p1, p2)
        out = []
        for a in self._run(f"!({op} {args})"):
            stmt, tv = a.get_children()
            out.append((atom_to_term(stmt), *_tv(tv)))
        return out

    def nal(self, p1: Belief | str, p2: Belief | str | None = None) -> list[Conclusion]:
        return self.derive("nal", p1, p2)

    def pln(self, p1: Belief | str, p2: Belief | str | None = None) -> list[Conclusion]:
        return self.derive("pln", p1, p2)

    def _run(self, program: str) -> list[Any]:
        results = self.metta.run(program)
        if len(results) != 1 or len(results[0]) != 1:
            raise InterpretedError(f"expected one result list, got {results}")
        return list(results[0][0].get_children())


def _b(p: Belief | str) -> Belief:
    return p if isinstance(p, Belief) else parse_belief(p)


def _args(p1: Belief | str, p2: Belief | str | None) -> str:
    """Premise text for the runner; beliefs built in code are size-checked like parsed ones."""
    beliefs = [_b(p) for p in (p1, p2) if p is not None]
    for b in beliefs:
        check_size(b.term)
    return " ".join(b.metta() for b in beliefs)


def check_size(t: Term, max_children: int = MAX_CHILDREN, max_nodes: int = MAX_TOKENS) -> None:
    """Refuse terms hyperon could choke on (an expression of 1024 children kills the process)."""
    stack, nodes = [t], 0
    while stack:
        x = stack.pop()
        nodes += 1
        if x.__class__ is tuple:
            if len(x) > max_children:
                raise AtomError(f"expression has {len(x)} children (limit {max_children})")
            stack.extend(x)
        if nodes > max_nodes:
            raise AtomError(f"expression too large (over {max_nodes} atoms)")


def _conclusion(atom: Any) -> Conclusion:
    name, concl = atom.get_children()
    stmt, tv = concl.get_children()
    f, c = _tv(tv)
    return Conclusion(str(name), atom_to_term(stmt), f, c)


def _tv(atom: Any) -> tuple[float, float]:
    head, f, c = atom.get_children()
    if str(head) != "stv":
        raise InterpretedError(f"not a truth value: {atom}")
    return float(f.get_object().value), float(c.get_object().value)


def atom_to_term(atom: Any) -> Term:
    """hyperon Atom -> term, keeping numbers as their text and variables as ``$name``."""
    from hyperon import AtomKind

    kind = atom.get_metatype()
    if kind == AtomKind.EXPR:
        return tuple(atom_to_term(c) for c in atom.get_children())
    if kind == AtomKind.VARIABLE:
        return f"${atom.get_name()}"
    return str(atom)
