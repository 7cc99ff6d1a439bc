"""Read a rule library (lib/nal.metta, lib/pln.metta) with hyperon's own parser, once.

The fast path must not keep a second copy of the rules: it takes the very atoms hyperon parses from the
MeTTa file and turns them into plain Python values for the compiler.  Conventions read here:
``(PREFIX-rule NAME P1 P2 CONCL)``, ``(PREFIX-rule1 NAME P CONCL)``, ``(PREFIX-copula SYM)``,
``(PREFIX-same-statement NAME)`` (the rule takes two beliefs about one ground statement only) and
``(= (FUNCTION ARGS...) BODY)`` truth-function definitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .terms import RVar, Term

LIB_DIR = Path(__file__).resolve().parents[3] / "lib"


@dataclass(frozen=True)
class Rule:
    """One inference rule: premise patterns ``(STATEMENT $T)`` and a conclusion ``(STATEMENT TV-EXPR)``."""

    name: str
    premises: tuple[Term, ...]
    conclusion: Term
    index: int


@dataclass
class RuleSet:
    """Everything the compiler needs from one library file."""

    prefix: str
    path: Path
    rules2: list[Rule] = field(default_factory=list)
    rules1: list[Rule] = field(default_factory=list)
    copulas: set[str] = field(default_factory=set)
    same_statement: set[str] = field(default_factory=set)  # rule names
    functions: dict[str, list[tuple[Term, Term]]] = field(default_factory=dict)


def lib_path(name: str) -> Path:
    """Path of a library file by module name (``nal`` or ``pln``)."""
    return LIB_DIR / f"{name}.metta"


def load_ruleset(prefix: str, path: Path | None = None) -> RuleSet:
    """Parse the file with hyperon and sort its atoms into rules, copulas and functions."""
    from hyperon import MeTTa  # heavy import, only when a rule set is first needed

    path = path or lib_path(prefix)
    atoms = MeTTa().parse_all(path.read_text(encoding="utf-8"))
    rs = RuleSet(prefix, path)
    for atom in atoms:
        t = to_term(atom, {})
        if t.__class__ is not tuple or not t:
            continue
        head = t[0]
        if head == f"{prefix}-rule" and len(t) == 5:
            rs.rules2.append(Rule(str(t[1]), (t[2], t[3]), t[4], len(rs.rules2)))
        elif head == f"{prefix}-rule1" and len(t) == 4:
            rs.rules1.append(Rule(str(t[1]), (t[2],), t[3], len(rs.rules1)))
        elif head == f"{prefix}-copula" and len(t) == 2:
            rs.copulas.add(str(t[1]))
        elif head == f"{prefix}-same-statement" and len(t) == 2:
            rs.same_statement.add(str(t[1]))
        elif head == "=" and len(t) == 3 and t[1].__class__ is tuple and t[1]:
            rs.functions.setdefault(str(t[1][0]), []).append((t[1], t[2]))
    if not rs.rules2:
        raise ValueError(f"{path}: no ({prefix}-rule ...) atoms found")
    return rs


def to_term(atom: object, scope: dict[str, RVar]) -> Term:
    """hyperon Atom -> term; variables become RVar shared within one top-level atom, numbers floats."""
    from hyperon import AtomKind

    kind = atom.get_metatype()  # type: ignore[attr-defined]
    if kind == AtomKind.SYMBOL:
        return atom.get_name()  # type: ignore[attr-defined]
    if kind == AtomKind.VARIABLE:
        name = atom.get_name()  # type: ignore[attr-defined]
        if name not in scope:
            scope[name] = RVar(name)
        return scope[name]  # type: ignore[return-value]
    if kind == AtomKind.EXPR:
        return tuple(to_term(c, scope) for c in atom.get_children())  # type: ignore[attr-defined]
    try:
        value = getattr(atom.get_object(), "value", None)  # type: ignore[attr-defined]
    except TypeError:  # grounded operations implemented in Rust (==, +, ...) have no Python object
        return str(atom)
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int | float):
        return float(value)  # type: ignore[return-value]
    return str(atom)
