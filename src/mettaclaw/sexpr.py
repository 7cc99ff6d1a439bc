"""A small s-expression reader and writer for the text the model writes and the trace stores.

The model's replies are not MeTTa we want hyperon to tokenize (a stray `$x` or 1024 children would
reach the interpreter), so they are read here first; the trace uses the same quoting to round-trip.
"""

from __future__ import annotations

from dataclasses import dataclass

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


class SexprError(ValueError):
    """Unbalanced parentheses or an unterminated string; the message says where."""


@dataclass(frozen=True)
class Str:
    """A string literal (quotes removed, escapes decoded)."""

    value: str


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
    """Whether `text` reads back as one bare token (what `_read` takes for a Sym): a skill name is
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


def _read(text: str, i: int, depth: int = 0) -> tuple[Node, int]:
    ch = text[i]
    if ch == '"':
        value, end = read_string(text, i)
        return Str(value), end
    if ch == "(":
        if depth >= MAX_DEPTH:
            raise SexprError(f"expression nested deeper than {MAX_DEPTH} levels at character {i + 1}")
        items: list[Node] = []
        j = i + 1
        while True:
            while j < len(text) and text[j].isspace():
                j += 1
            if j >= len(text):
                raise SexprError(f"unbalanced '(' at character {i + 1}")
            if text[j] == ")":
                return Expr(tuple(items), text[i : j + 1]), j + 1
            node, j = _read(text, j, depth + 1)
            items.append(node)
    if ch == ")":
        raise SexprError(f"unexpected ')' at character {i + 1}")
    j = i
    while j < len(text) and not text[j].isspace() and text[j] not in '()"':
        j += 1
    return Sym(text[i:j]), j


def read_all(text: str) -> list[Node]:
    """Read every top-level expression in text; raises SexprError on malformed input."""
    return [node for _, node in read_forms(text)]


def read_forms(text: str) -> list[tuple[int, Node]]:
    """Like read_all, with the character index where each top-level form starts."""
    nodes: list[tuple[int, Node]] = []
    i = 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        if text[i] == ";":
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl + 1
            continue
        start = i
        node, i = _read(text, i)
        nodes.append((start, node))
    return nodes


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
