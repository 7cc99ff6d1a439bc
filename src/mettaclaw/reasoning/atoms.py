"""Beliefs: a statement with a truth value, parsed and checked before it reaches any reasoner.

Everything the model or a memory hands over as an atom passes through here, so the reasoners can
trust their input: known copulas with the right arity, f in [0, 1], c in [0, 1), and sizes far below
what kills hyperon (1024 children).  Errors are ``AtomError`` with a message fit for the model.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from mettaclaw.sexpr import SexprError, TooManyExpressions, without_comments

from .terms import Term, format_number, has_vars, is_var, parse_all, render, shape

MAX_TOKENS = 400
MAX_CHILDREN = 32
MAX_DEPTH = 10
MAX_SHOWN_CONFIDENCE = 0.999999  # the largest confidence below 1 that format_number's 6 decimals show

# Binary copulas and statement connectives with their arity (None: two or more).
NAL_STATEMENT_HEADS: dict[str, int | None] = {
    "-->": 2, "<->": 2, "==>": 2, "<=>": 2, "¬": 1, "∧": None, "∨": None,
}
PLN_STATEMENT_HEADS: dict[str, int | None] = {
    "Inheritance": 2, "Implication": 2, "Similarity": 2, "IntensionalSimilarity": 2,
    "ExtensionalSimilarity": 2, "Equivalence": 2, "Evaluation": 2, "Member": 2, "Not": 1,
    "And": None, "Or": None,
}
STATEMENT_HEADS = {**NAL_STATEMENT_HEADS, **PLN_STATEMENT_HEADS}
# NAL connectives whose arguments are themselves statements.
_STATEMENT_ARGS = {"==>", "<=>", "¬", "∧", "∨"}
# Alternative spellings mapped onto the ones the rule files use.
_SPELLINGS = {"ExtSet": "{}", "IntSet": "[]"}
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_STV_HINT = re.compile(r"\(\s*stv\s")
# How a belief begins: an expression, or one symbol (perhaps quoted) and its truth value (`rain (stv 0.5 0.5)`)
_BELIEF_START = re.compile(r'^(?:\(|(?:"(?:[^"\\]|\\.)*"|[^\s()"]+)\s*\(\s*stv\s)')
# Control characters and line/paragraph separators: only a quoted symbol can hold them, and printed in a
# skill's output a newline there starts a line of the symbol's choosing, e.g. a forged conclusion.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class AtomError(ValueError):
    """A belief the reasoners must not see; the message names the cause for the model."""


class TooManyBeliefs(AtomError):
    """More beliefs than the caller takes (well-formed input, so not reported as malformed)."""


@dataclass(frozen=True)
class Belief:
    """A statement with a (stv f c) truth value; ``term`` is the parsed statement."""

    term: Term
    f: float
    c: float

    # Computed on first use and cached: chaining creates many beliefs that are never printed.
    @cached_property
    def statement(self) -> str:
        """Canonical MeTTa text of the statement."""
        return render(self.term)

    @cached_property
    def has_vars(self) -> bool:
        return has_vars(self.term)

    @cached_property
    def shape(self) -> Any:
        """Index key the engines use to pick candidate rules."""
        return shape(self.term)

    def text(self) -> str:
        """``(--> cat animal) (stv 1.0 0.9)``: the form `remember` stores and skills print."""
        # a confidence just under 1 must not print as 1.0, which no skill takes back (certainty)
        c = min(self.c, MAX_SHOWN_CONFIDENCE) if self.c < 1.0 else self.c
        return f"{self.statement} (stv {format_number(self.f)} {format_number(c)})"

    def metta(self) -> str:
        """The wrapped form ``((--> cat animal) (stv 1.0 0.9))`` that `|-` and `|~` take."""
        return f"({self.statement} (stv {float(self.f)!r} {float(self.c)!r}))"

    def __str__(self) -> str:
        return self.text()


def looks_like_belief(text: str) -> bool:
    """Cheap test used by `remember`: an s-expression that carries ``(stv ...)``. It must begin as a belief
    does: prose that mentions a truth value ("the acronym (stv means simple truth value)") was taken for a
    malformed belief, and `remember` refused it ("the has no truth value"). A MeTTa comment after it
    (`; note`) is no part of it: with one, the belief was stored as plain text."""
    s = without_comments(text).strip()
    return s.endswith(")") and _BELIEF_START.match(s) is not None and _STV_HINT.search(s) is not None


def parse_belief(text: str) -> Belief:
    """Parse one belief: ``(S) (stv f c)``, ``((S) (stv f c))`` or ``sym (stv f c)``."""
    beliefs = parse_beliefs(text)
    if len(beliefs) != 1:
        raise AtomError(f"expected one belief, found {len(beliefs)}")
    return beliefs[0]


def parse_beliefs(text: str, limit: int = 64) -> list[Belief]:
    """Parse every belief in the text, in order; both the bare and the wrapped forms may mix."""
    if not text or not text.strip():
        raise AtomError("no belief given: write e.g. (--> cat animal) (stv 1.0 0.9)")
    try:
        items = parse_all(text, max_tokens=max(MAX_TOKENS, 12 * limit), max_children=MAX_CHILDREN,
                          max_depth=MAX_DEPTH, max_top=2 * limit + 1)
    except TooManyExpressions:  # two top-level items a belief: more than `limit` beliefs, not bad syntax
        raise TooManyBeliefs(f"too many beliefs (limit {limit})") from None
    except SexprError as e:
        raise AtomError(f"malformed atom: {e}") from None
    beliefs: list[Belief] = []
    i = 0
    while i < len(items):
        item = items[i]
        if _is_stv(item):
            raise AtomError(f"truth value {render(item)} has no statement before it")
        if item.__class__ is tuple and len(item) == 2 and _is_stv(item[1]):
            beliefs.append(make_belief(item[0], item[1]))
            i += 1
        elif i + 1 < len(items) and _is_stv(items[i + 1]):
            beliefs.append(make_belief(item, items[i + 1]))
            i += 2
        elif item.__class__ is str and item[:1] == '"' and _STV_HINT.search(item):  # its truth value is inside
            raise AtomError(f"{item[:80]} is a quoted string, not a belief: write beliefs without quotes, "
                            "e.g. (--> cat animal) (stv 1.0 0.9)")
        else:
            raise AtomError(f"{render(item)[:80]} has no truth value: add (stv f c), e.g. (stv 1.0 0.9)")
        if len(beliefs) > limit:
            raise TooManyBeliefs(f"too many beliefs (limit {limit})")
    return beliefs


def make_belief(statement: Term, stv: Term) -> Belief:
    """Check a parsed statement and truth value and build the Belief."""
    f, c = parse_truth(stv)
    term = _respell(statement)
    check_statement(term)
    return Belief(term, f, c)


def parse_truth(stv: Term, *, certain: bool = False) -> tuple[float, float]:
    """(f, c) of a truth value `(stv f c)`: two numbers, f in [0, 1] and c in [0, 1), or in [0, 1] where
    `certain` (PLN's revision caps c at 1, and `infer` keeps such conclusions as facts); AtomError naming
    the cause otherwise. The one reader of a truth value: beliefs here, atoms in semantic memory."""
    if stv.__class__ is not tuple or len(stv) != 3 or stv[0] != "stv":
        raise AtomError(f"truth value must be (stv f c), got {render(stv)[:60]}")
    f, c = _number(stv[1], "frequency"), _number(stv[2], "confidence")
    if not 0.0 <= f <= 1.0:
        raise AtomError(f"frequency {stv[1]} out of range: must be in [0, 1]")
    if not (0.0 <= c <= 1.0 if certain else 0.0 <= c < 1.0):
        bound = "[0, 1]" if certain else "[0, 1) (1 would mean certainty)"
        raise AtomError(f"confidence {stv[2]} out of range: must be in {bound}")
    return f, c


def check_statement(t: Term, *, nested: bool = False) -> None:
    """A statement is a symbol or a known connective applied to terms (statements where NAL needs)."""
    if t.__class__ is str:
        if is_var(t) and not nested:
            raise AtomError(f"a statement cannot be a bare variable ({t})")
        _check_symbol(t)
        return
    if not t:
        raise AtomError("empty expression () is not a statement")
    head = t[0]
    if head.__class__ is not str or is_var(head):
        raise AtomError(f"unknown copula {render(head)[:40]}: a statement starts with one of "
                        + " ".join(STATEMENT_HEADS))
    if head not in STATEMENT_HEADS:
        raise AtomError(f"unknown copula '{head}': use one of " + " ".join(STATEMENT_HEADS))
    arity = STATEMENT_HEADS[head]
    n = len(t) - 1
    if (arity is not None and n != arity) or (arity is None and n < 2):
        want = arity if arity is not None else "two or more"
        raise AtomError(f"'{head}' takes {want} arguments, got {n}")
    for arg in t[1:]:
        if head in _STATEMENT_ARGS and not (arg.__class__ is str and is_var(arg)):
            check_statement(arg, nested=True)
        else:
            _check_term(arg)


def _check_symbol(t: str) -> None:
    if t == "stv":
        raise AtomError("'stv' cannot appear inside a statement")
    if (bad := _CONTROL.search(t)) is not None:
        raise AtomError(f"symbol {t[:40]!r} holds U+{ord(bad.group()):04X}, a control or line-break character: "
                        "a symbol is printable text on one line")


def _check_term(t: Term) -> None:
    if t.__class__ is str:
        _check_symbol(t)
        return
    if not t:
        raise AtomError("empty expression () is not a term")
    if t[0].__class__ is not str:
        raise AtomError(f"a compound term must start with a symbol: {render(t)[:60]}")
    if t[0] == "stv":
        raise AtomError("'stv' cannot appear inside a statement")
    for x in t[1:]:
        _check_term(x)


def _respell(t: Term) -> Term:
    if t.__class__ is tuple:
        return tuple(_respell(x) for x in t)
    return _SPELLINGS.get(t, t)


def _is_stv(t: Term) -> bool:
    return t.__class__ is tuple and len(t) >= 1 and t[0] == "stv"


def _number(tok: Term, what: str) -> float:
    if tok.__class__ is not str or not _NUMBER.match(tok):
        raise AtomError(f"{what} must be a number, got {render(tok)[:30]}")
    x = float(tok)
    if not math.isfinite(x):
        raise AtomError(f"{what} must be finite, got {tok}")
    return x


def stored_text(text: str) -> str:
    """What `remember` stores for its argument: a belief as its atom's text (`(stv 1 0.9)` is kept as
    `(stv 1.0 0.9)`), anything else stripped; AtomError for a malformed belief."""
    text = text.strip()
    return parse_belief(text).text() if looks_like_belief(text) else text
