"""The reply parser: the model's lines into `(skill "arg" ...)` commands.

Matches the reference's format (one command a line, `-` lines are pins, one outer pair of parentheses
stripped) and fixes its defects: the tuple form `((a "x") (b "y"))` is accepted, fenced or quoted
multi-line arguments are kept whole, commands past `max_commands` are reported instead of run, and
every line that cannot be read yields an error naming the line and the cause. Invisible characters
(a byte-order mark, zero-width spaces and joiners) where a line starts or glued to either end of a
skill name are dropped; inside an argument they are kept.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from mettaclaw.sexpr import (
    MAX_DEPTH,
    Expr,
    SexprError,
    Str,
    Sym,
    is_symbol,
    quote,
    read_all,
    read_string,
    to_text,
)
from mettaclaw.textutil import one_line, quoted

FENCE = "```"
# invisible characters a model or a client puts where a line starts (a byte-order mark, zero-width
# spaces and joiners, the word joiner, direction marks): glued to the skill name, `\ufeffsend` was an
# unknown skill that read as `send`
INVISIBLE = "\ufeff\u200b\u200c\u200d\u2060\u200e\u200f\u00ad\u180e"
LEADING_INVISIBLE = re.compile(f"^[\\s{INVISIBLE}]+")


def _without_leading_invisible(line: str) -> str:
    """The line without the invisible characters before its first visible one (whitespace is kept)."""
    match = LEADING_INVISIBLE.match(line)
    if match is None or not any(ch in INVISIBLE for ch in match.group()):
        return line
    return "".join(ch for ch in match.group() if ch not in INVISIBLE) + line[match.end():]


@dataclass(frozen=True)
class Command:
    skill: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return "(" + " ".join([self.skill, *(quote(a) for a in self.args)]) + ")"

    def brief(self, limit: int = 200) -> str:
        """The command as shown beside its result: long arguments are cut, so results stay readable."""
        text = str(self)
        return text if len(text) <= limit else text[: limit - 20] + f"... [{len(text)} chars])"


@dataclass
class ParsedReply:
    commands: list[Command] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    skipped: list[Command] = field(default_factory=list)


def _split_first(text: str, line_no: int) -> tuple[str, str]:
    """Split off the first argument: a quoted string or a whitespace-delimited word. A quote left open
    is an error, as in a one-argument skill: `write-file "notes text` wrote a file named `"notes`."""
    text = text.lstrip()
    if text.startswith('"'):
        try:
            value, end = read_string(text, 0)
        except SexprError as err:
            raise ValueError(f"line {line_no}: {err}") from None
        return value, text[end:]
    head, _, rest = text.partition(" ")
    return head, rest


def _unfence(text: str, line_no: int) -> str:
    """`rest` that opens with ``` is the fenced body (language tag dropped); plain text is kept."""
    stripped = text.strip()
    if stripped.startswith(FENCE):
        body = stripped[len(FENCE) :]
        if not body.rstrip().endswith(FENCE) or len(body.rstrip()) < len(FENCE):
            raise ValueError(f"line {line_no}: unclosed ``` fence in the argument")
        body = body.rstrip()[: -len(FENCE)]
        first, nl, after = body.partition("\n")
        if nl and first.strip() and " " not in first.strip():
            body = after  # ```bash ... ```: drop the language tag
        elif nl and not first.strip():
            body = after
        return body.rstrip("\n")
    if stripped.startswith('"'):
        try:
            value, end = read_string(stripped, 0)
        except SexprError as err:
            raise ValueError(f"line {line_no}: {err}") from None
        if end == len(stripped):
            return value
    return text.strip()


def _plain_command(line: str, line_no: int, arity: Mapping[str, int]) -> Command:
    skill, _, rest = line.strip().partition(" ")
    skill = skill.strip(INVISIBLE) or skill  # `send\u200b hi`: what glues onto the name is not part of it
    if not is_symbol(skill):  # the trace writes the name as a symbol: it must read back as one
        raise ValueError(f"line {line_no}: {skill[:40]!r} is not a skill name (a word without ( ) or \")")
    rest = rest.strip()
    if not rest:
        return Command(skill, ())
    if arity.get(skill, 1) >= 2:
        first, text = _split_first(rest, line_no)
        return Command(skill, (first, _unfence(text, line_no)) if text.strip() else (first,))
    return Command(skill, (_unfence(rest, line_no),))


def _expr_commands(node: Expr, arity: Mapping[str, int]) -> list[Command]:
    if node.items and isinstance(node.items[0], Expr):  # tuple form ((a "x") (b "y"))
        out: list[Command] = []
        for item in node.items:
            if not isinstance(item, Expr):
                raise ValueError(f"tuple form mixes commands and {to_text(item)!r}")
            out.extend(_expr_commands(item, arity))
        return out
    if not node.items or not isinstance(node.items[0], Sym):
        raise ValueError(f"{node.source!r} does not start with a skill name")
    skill = node.items[0].text.strip(INVISIBLE) or node.items[0].text
    args = [to_text(n) for n in node.items[1:]]
    wanted = max(1, arity.get(skill, 1))
    if len(args) > wanted and not all(isinstance(n, Str) for n in node.items[1:]):
        # (remember the sky is blue): bare words form one argument, as in the line form
        args = args[: wanted - 1] + [" ".join(args[wanted - 1 :])]
    return [Command(skill, tuple(args))]


def _logical_lines(reply: str) -> list[tuple[int, str]]:
    """Join physical lines while a fence, a string or a parenthesis opened on them is still open.

    Linear in the reply: each line is scanned once by an `_OpenScan` carried from line to line (reading
    the growing text again after every line is quadratic behind an unclosed `(`: docs/decisions/0018)."""
    lines = reply.replace("\r\n", "\n").split("\n")
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        start, text = i, _without_leading_invisible(lines[i])  # where a line starts, never inside an argument
        i += 1
        if text.count(FENCE) % 2 == 1:
            while i < len(lines):
                text += "\n" + lines[i]
                i += 1
                if lines[i - 1].strip().startswith(FENCE):
                    break
        else:
            scan = _OpenScan(_readable_part(text))
            if scan.open:
                j = i
                while j < len(lines) and scan.open:
                    scan.feed("\n" + lines[j])
                    j += 1
                if not scan.open:  # closed (or broken, which the reader will report): one logical line
                    text, i = "\n".join(lines[start:j]), j
        out.append((start + 1, text))
    return out


def _readable_part(text: str) -> str:
    """What may span lines: a whole expression, or an argument that opens with a quote."""
    stripped = text.strip()
    if stripped.startswith("("):
        return stripped
    return _argument_part(stripped) if '"' in stripped else ""


class _OpenScan:
    """Whether text read so far leaves a string or a parenthesis open, as `sexpr.read_all` would find
    it, fed piece by piece. An error the reader stops at first (a stray `)`, nesting deeper than its
    limit) makes it `broken`: never open, whatever follows."""

    def __init__(self, text: str = "") -> None:
        self.depth, self.in_string, self.escaped, self.broken = 0, False, False, False
        self.in_comment = False  # a `;` between top-level forms comments out the rest of its line
        self.in_atom = False  # inside a top-level symbol, which the reader reads through a `;` ("0;(")
        self.feed(text)

    @property
    def open(self) -> bool:
        return not self.broken and (self.in_string or self.depth > 0)

    def feed(self, text: str) -> None:
        for ch in text:
            if self.broken:
                return
            if self.in_comment:
                self.in_comment = ch != "\n"
            elif self.in_string:
                if self.escaped:
                    self.escaped = False
                elif ch == "\\":
                    self.escaped = True
                elif ch == '"':
                    self.in_string = False
            elif ch == '"':
                self.in_string, self.in_atom = True, False
            elif ch == ";" and self.depth == 0 and not self.in_atom:
                self.in_comment = True
            elif self.depth == 0 and ch not in "()":
                self.in_atom = not ch.isspace()
            elif ch == "(":
                self.broken, self.in_atom = self.depth >= MAX_DEPTH, False
                self.depth += 1
            elif ch == ")":
                self.broken, self.in_atom = self.depth == 0, False
                self.depth -= 1


def _argument_part(line: str) -> str:
    """Only a quote that opens an argument may span lines (`send it's "great` stays one line)."""
    _, _, rest = line.partition(" ")
    rest = rest.lstrip()
    if rest.startswith('"'):
        return rest
    _, _, after_first = rest.partition(" ")
    after_first = after_first.lstrip()
    return after_first if after_first.startswith('"') else ""


STANDALONE_FENCE = re.compile(r"```[^\s`]*(\n|$)")  # a fence line holding a language tag at most
THINKING = re.compile(r"\s*<(think|thinking|reasoning)>(.*?)(</\1>|\Z)", re.DOTALL | re.IGNORECASE)


def _without_thinking(reply: str) -> tuple[str, int, bool]:
    """The reply after a reasoning model's leading `<think>...</think>` block (DeepSeek-R1, Qwen3 on
    Ollama or llama.cpp put it in the text), the lines it took, and whether it was never closed (the
    reply cut off while the model was still thinking). Its every line was read as a command: prose
    answered "unknown skill" and used up maxCommands, so the commands after it were skipped."""
    match = THINKING.match(reply)
    if match is None:
        return reply, 0, False
    return reply[match.end():], reply.count("\n", 0, match.end()), not match.group(3)


def _fenced_body(text: str) -> str:
    """The text inside a fence that stands alone (```, or ```text, ..., ```): a model that wraps its
    whole reply in a code block, which made its first line "'```\nsend' is not a skill name" and ran
    nothing. A fence left open (the reply cut short) holds the rest of the reply."""
    lines = text.strip().split("\n")[1:]  # after ``` and its language tag
    if lines and lines[-1].strip() == FENCE:
        lines.pop()
    return "\n".join(lines)


def parse_reply(reply: str, max_commands: int = 5, arity: Mapping[str, int] | None = None,
                skills: Collection[str] | None = None) -> ParsedReply:
    """Parse a whole reply; `arity` names skills taking more than one argument (e.g. write-file: 2).

    Fenced blocks (a fence on a line of its own, ``` or ```lang): a block right after a command that
    lacks its (last) argument is that argument (`write-file a.txt` then the file's text); any other
    block's lines are the reply's lines, read as commands (a reply wrapped whole in a code block).

    Text around the code: given the agent's `skills`, a reply that holds a fenced block is written
    like a chat answer, its code in the block. A line outside every block that is no command (its
    first word names no skill, and it is no `(...)` form or `-` pin) is then prose, when the reply's
    commands include a skill: "Here:" or "I'll save it:" before the block, "Hope this helps" after.
    Prose is not run and takes none of the `max_commands`; one error says it was not run (a model that
    meant it for the person learns it was never sent). A bare word before a block is no command
    lacking its argument, so the block's lines run (they were the argument of an unknown skill
    `Here:`). When no skill is found this way, or nothing is fenced, or `skills` is not given, every
    line is read as a command: `fly to the moon` is still an unknown skill, and a reply of only prose
    and a fenced script reports both.
    """
    arity = arity or {}
    reply, skipped_lines, unclosed = _without_thinking(_without_leading_invisible(reply))
    if unclosed:
        return ParsedReply(errors=["line 1: the reply is only the model's reasoning (<think> is never closed): no command"])
    lines = [(n + skipped_lines, text) for n, text in _logical_lines(reply)]
    if skills is not None:
        known = frozenset(skills)
        found, errors, prose, fenced = _read_lines(lines, arity, known)
        if fenced and any(c.skill in known for c in found):
            if prose:
                (first, text), more = prose[0], len(prose) - 1
                lines_said = f" and {more} more line{'s' if more > 1 else ''} are" if more else " is"
                errors.append(f"line {first}: {quoted(one_line(text), 80)}{lines_said} text outside the code block, "
                              f"not {'commands' if more else 'a command'}: not run (only skill lines run; "
                              "`send` says something to the person)")
            return ParsedReply(found[:max_commands], errors, found[max_commands:])
    found, errors, _, _ = _read_lines(lines, arity, None)
    return ParsedReply(found[:max_commands], errors, found[max_commands:])


def _is_command(stripped: str, skills: frozenset[str]) -> bool:
    """Whether a line outside the code blocks is meant as a command, not prose around them."""
    if stripped.startswith(("(", "-")):
        return True
    return (stripped.split(None, 1)[0].strip(INVISIBLE) or stripped) in skills


def _read_lines(
    logical: list[tuple[int, str]], arity: Mapping[str, int], skills: frozenset[str] | None,
) -> tuple[list[Command], list[str], list[tuple[int, str]], bool]:
    """The commands and errors of the reply's logical lines; with `skills`, also its lines outside the
    fenced blocks that are no command (not read); and whether it holds a fenced block."""
    found: list[Command] = []
    errors: list[str] = []
    prose: list[tuple[int, str]] = []
    any_fence = False
    lines = deque((n, text, False) for n, text in logical)  # (line, text, from inside a fenced block)
    bare: Command | None = None  # the last line's command, when it lacks its (last) argument
    while lines:
        line_no, text, fenced = lines.popleft()
        stripped = text.strip()
        if not stripped:
            continue
        if stripped.startswith(FENCE) and STANDALONE_FENCE.match(stripped):
            any_fence = True
            if bare is not None:  # `send` then a fenced block: the block is its argument
                found[-1] = Command(bare.skill, (*bare.args, _fenced_body(text).strip("\n")))
            else:  # its lines are the reply's (the fence's own line is line_no)
                lines.extendleft(reversed([(line_no + n, t, True) for n, t in _logical_lines(_fenced_body(text))]))
            bare = None
            continue
        before, bare = len(found), None
        if skills is not None and not fenced and not _is_command(stripped, skills):
            prose.append((line_no, stripped))
            continue
        try:
            if stripped.startswith("-"):
                found.append(Command("pin", (stripped,)))
            elif stripped.startswith("("):
                try:
                    nodes = read_all(stripped)
                except SexprError:
                    nodes = []
                if nodes and all(isinstance(n, Expr) for n in nodes):
                    for node in nodes:
                        found.extend(_expr_commands(node, arity))  # type: ignore[arg-type]
                elif stripped.endswith(")"):
                    found.append(_plain_command(stripped[1:-1], line_no, arity))
                else:
                    raise ValueError(f"unbalanced parentheses in {stripped[:80]!r}")
            else:
                found.append(_plain_command(stripped, line_no, arity))
        except ValueError as err:
            msg = str(err)
            errors.append(msg if msg.startswith("line ") else f"line {line_no}: {msg}")
        if len(found) == before + 1 and len(found[-1].args) < max(1, arity.get(found[-1].skill, 1)):
            bare = found[-1]
    return found, errors, prose, any_fence


__all__ = ["Command", "ParsedReply", "parse_reply", "Str"]
