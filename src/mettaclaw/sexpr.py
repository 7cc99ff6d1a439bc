"""The one s-expression reader (and writer) of the project: the text the model writes, the trace, skill
files, beliefs (`reasoning.terms`) and the semantic layer's atoms are all read here.

The model's replies are not MeTTa we want hyperon to tokenize (a stray `$x` or 1024 children would
reach the interpreter), so they are read here first; the trace uses the same quoting to round-trip.
Callers differ only in what they ask of it: MeTTa's comments (`metta=True`: a `;` outside a string
starts a comment to the end of the line, even inside an expression or a symbol, as hyperon reads it;
otherwise a `;` starts one only between top-level forms and is a symbol's character elsewhere) and
the caps a caller puts on the size of what it reads (`Limits`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
_SPACE = re.compile(r"\s*")
_SYMBOL = re.compile(r'[^\s()"]+')  # a bare token
_METTA_SYMBOL = re.compile(r'[^\s()";]+')  # a bare token, which a MeTTa comment ends
_METTA_COMMENT = re.compile(r'("(?:\\[\s\S]|[^"\\])*")|;[^\n]*')  # a string is kept whole, `;` to the line's end goes


class SexprError(ValueError):
    """Text that is not a well-formed s-expression (unbalanced parentheses, an unterminated string) or
    is past a caller's caps; the message says where or which."""


class TooManyExpressions(SexprError):
    """More top-level expressions than the caller takes: a count the caller words, not bad syntax."""


@dataclass(frozen=True)
class Str:
    """A string literal (quotes removed, escapes decoded); `source`: the literal as written."""

    value: str
    source: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True)
class Sym:
    """A bare token: symbol, number or variable, kept as written."""

    text: str


@dataclass(frozen=True)
class Expr:
    items: tuple[Node, ...]
    source: str  # the exact text of the expression, for arguments that are code


Node = Str | Sym | Expr


def quote(text: str) -> str:
    """Quote text as a one-line MeTTa string literal (newlines escaped, so one record is one line)."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return f'"{out}"'


def is_symbol(text: str) -> bool:
    """Whether `text` reads back as one bare token (what the reader takes for a Sym): a skill name is
    written unquoted, so one holding whitespace, ( ) or " would read back as other tokens or other
    records (a newline ends a trace record)."""
    return bool(text) and not any(ch.isspace() or ch in '()"' for ch in text)


def read_string(text: str, start: int) -> tuple[str, int]:
    """Read a string literal whose opening quote is at `start`; return (value, index after it)."""
    out: list[str] = []
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], "\\" + text[i + 1]))
            i += 2
            continue
        if ch == '"':
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    raise SexprError(f"unterminated string starting at character {start + 1}")


MAX_DEPTH = 100


@dataclass(frozen=True)
class Limits:
    """Caps on what one read takes (None: no cap). `tokens` is checked before any expression is built,
    so an input past it costs one scan; `depth` counts nested parentheses, `children` the items of one
    expression (hyperon dies at 1024), `top` the top-level expressions (TooManyExpressions)."""

    tokens: int | None = None
    depth: int = MAX_DEPTH
    children: int | None = None
    top: int | None = None


_DEFAULT = Limits()
_Token = tuple[int, "str | Node"]  # where it starts, and "(" or ")" or the Str or Sym it is


def _scan(text: str, metta: bool) -> Iterator[_Token]:
    """The tokens of `text` in order, comments and space skipped."""
    symbol, depth, pos, end = _METTA_SYMBOL if metta else _SYMBOL, 0, 0, len(text)
    while (pos := _SPACE.match(text, pos).end()) < end:  # type: ignore[union-attr]
        ch = text[pos]
        if ch == ";" and (metta or depth == 0):
            nl = text.find("\n", pos)
            pos = end if nl < 0 else nl + 1
        elif ch == "(" or ch == ")":
            depth = depth + 1 if ch == "(" else max(0, depth - 1)
            yield pos, ch
            pos += 1
        elif ch == '"':
            value, after = read_string(text, pos)
            yield pos, Str(value, text[pos:after])
            pos = after
        else:
            found = symbol.match(text, pos)
            yield pos, Sym(found.group())  # type: ignore[union-attr]
            pos = found.end()  # type: ignore[union-attr]


def read_forms(text: str, *, metta: bool = False, limits: Limits = _DEFAULT) -> list[tuple[int, Node]]:
    """Every top-level expression in `text` with the character index where it starts; SexprError (with
    where) on malformed input or input past `limits`."""
    tokens: Iterable[_Token] = _scan(text, metta)
    if limits.tokens is not None:
        tokens = list(tokens)
        if len(tokens) > limits.tokens:
            raise SexprError(f"expression too large: {len(tokens)} tokens (limit {limits.tokens})")
    forms: list[tuple[int, Node]] = []
    stack: list[tuple[int, list[Node]]] = []  # each open expression: where its "(" is, and its items
    for start, token in tokens:
        if token == "(":
            if len(stack) >= limits.depth:
                raise SexprError(f"expression nested deeper than {limits.depth} levels at character {start + 1}")
            stack.append((start, []))
            continue
        if token == ")":
            if not stack:
                raise SexprError(f"unexpected ')' at character {start + 1}")
            begin, items = stack.pop()
            node: Node = Expr(tuple(items), text[begin : start + 1])
            start = begin
        else:
            node = token  # type: ignore[assignment]
        if stack:
            items = stack[-1][1]
            items.append(node)
            if limits.children is not None and len(items) > limits.children:
                raise SexprError(f"expression has more than {limits.children} children "
                                 f"(the one at character {stack[-1][0] + 1})")
        else:
            forms.append((start, node))
            if limits.top is not None and len(forms) > limits.top:
                raise TooManyExpressions(f"more than {limits.top} top-level expressions")
    if stack:
        raise SexprError(f"unbalanced '(' at character {stack[-1][0] + 1}")
    return forms


def read_all(text: str, *, metta: bool = False, limits: Limits = _DEFAULT) -> list[Node]:
    """Every top-level expression in `text` (`read_forms` without where each starts)."""
    return [node for _, node in read_forms(text, metta=metta, limits=limits)]


def without_comments(text: str) -> str:
    """`text` with its MeTTa comments (`;` to the end of the line, outside strings, as `metta=True`
    reads them) taken out."""
    return _METTA_COMMENT.sub(lambda m: m.group(1) or "", text)


def to_text(node: Node) -> str:
    """The argument text a node stands for: strings unquoted, code kept as written."""
    if isinstance(node, Str):
        return node.value
    if isinstance(node, Sym):
        return node.text
    return node.source


def write(node: Node) -> str:
    if isinstance(node, Str):
        return quote(node.value)
    if isinstance(node, Sym):
        return node.text
    return "(" + " ".join(write(n) for n in node.items) + ")"
