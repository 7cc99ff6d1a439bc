"""Terms as plain Python values, so the fast path never touches hyperon at call time.

A term is a ``str`` (a symbol, a number written as text, a variable ``$name``, or a string literal
as written, quotes and all) or a ``tuple`` of terms (an expression).  Rule files add ``RVar`` (a rule
variable, kept apart from the variables a premise may carry) and ``float`` (a number inside a
truth-function expression).  Text becomes terms through the one s-expression reader (`sexpr`).
"""

from __future__ import annotations

from typing import Any

from mettaclaw.sexpr import Limits, Node, Str, Sym, read_all

Term = str | tuple


class RVar:
    """A variable of a rule pattern; identity matters, the name is for printing only."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"${self.name}"


def is_var(t: object) -> bool:
    """True for a premise variable (``$x`` text) or a rule variable."""
    return t.__class__ is RVar or (t.__class__ is str and t[:1] == "$")


def parse_all(text: str, *, max_tokens: int = 2000, max_children: int = 64, max_depth: int = 16,
              max_top: int = 256) -> list[Term]:
    """Every top-level s-expression of `text` as terms, read as MeTTa (a `;` outside a string starts a
    comment, even inside a symbol: hyperon reads `a;b` as `a`), within size caps (hyperon dies at 1024
    children); SexprError, or TooManyExpressions past `max_top`, otherwise."""
    limits = Limits(tokens=max_tokens, depth=max_depth, children=max_children, top=max_top)
    return [term_of(node) for node in read_all(text, metta=True, limits=limits)]


def term_of(node: Node) -> Term:
    """The term a node the reader read stands for: a string literal as written, quotes and all."""
    if isinstance(node, Sym):
        return node.text
    if isinstance(node, Str):
        return node.source
    return tuple(term_of(item) for item in node.items)


def render(t: object) -> str:
    """Canonical MeTTa text of a term: single spaces, no trailing blanks."""
    if t.__class__ is tuple:
        return "(" + " ".join(render(x) for x in t) + ")"
    if t.__class__ is float:
        return format_number(t)  # type: ignore[arg-type]
    return str(t) if t.__class__ is not RVar else repr(t)


def format_number(x: float) -> str:
    """Short, stable text for a truth value: 6 decimals, as the golden table is written."""
    r = round(x, 6)
    return repr(r if r != 0 else 0.0)


def has_vars(t: object) -> bool:
    if t.__class__ is tuple:
        return any(has_vars(x) for x in t)
    return is_var(t)


def variables(t: object) -> set[str]:
    """The names of a term's variables."""
    if t.__class__ is tuple:
        return set().union(*(variables(x) for x in t)) if t else set()
    return {str(t)} if is_var(t) and t.__class__ is not RVar else set()


def canonical_vars(t: Term) -> Term:
    """Rename variables to $v0, $v1, ... in order of appearance, to compare results up to renaming."""
    names: dict[str, str] = {}

    def walk(x: object) -> object:
        if x.__class__ is tuple:
            return tuple(walk(y) for y in x)
        if is_var(x):
            key = f"r{id(x)}" if x.__class__ is RVar else str(x)
            return names.setdefault(key, f"$v{len(names)}")
        return x

    return walk(t)  # type: ignore[return-value]


def shape(t: Any) -> Any:
    """Index key of a statement: its head and arity and those of its first two arguments.

    Variables (in rule patterns or premises) are ``None`` and match any key."""
    if is_var(t):
        return None
    if t.__class__ is not tuple:
        return "a"
    return (_kind(t), _kind(t[1]) if len(t) > 1 else "-", _kind(t[2]) if len(t) > 2 else "-")


def _kind(t: Any) -> Any:
    if is_var(t):
        return None
    if t.__class__ is tuple:
        h = t[0] if t and t[0].__class__ is str and not is_var(t[0]) else None
        return (h, len(t))
    return "a"


def compatible(p: Any, t: Any) -> bool:
    """Can a pattern key and a premise key belong to unifiable terms?"""
    if p is None or t is None:
        return True
    if p.__class__ is tuple and t.__class__ is tuple and len(p) == len(t):
        return all(compatible(a, b) for a, b in zip(p, t, strict=True))
    return p == t
