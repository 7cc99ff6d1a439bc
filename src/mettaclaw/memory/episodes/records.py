"""One record of the episodic trace: its line, `("YYYY-MM-DD HH:MM:SS" "HUMAN_MESSAGE: " "<message>"
(skill "arg") ... ["ERROR_FEEDBACK: ..."] ["FROM: <who>, <who> (<channel>)"] ["OUTCOMES: ..."]
["IN_REPLY_TO: ep-<offset> ..."])`, the episode it reads as, the times every reader of the trace can
parse back, and the ids (`ep-<offset>`) that name records. The file that holds the records is trace.py.

A record holds one message: a turn that gathered several writes one record each and then one record
of what the agent did (no message), whose IN_REPLY_TO names them. Why: a message is the unit of
recall, and a turn of fifty pasted lines was one hit with the answer dozens of lines deep.
Records written before that rule may hold several messages, one `who: text` line group each
(`message_parts` reads them apart, ids `ep-<offset>.<n>` for the second on).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mettaclaw.parser import Command
from mettaclaw.sexpr import Expr, SexprError, Str, Sym, quote, read_all, to_text

TIME_LEN = len("YYYY-MM-DD HH:MM:SS")
MAX_OFFSET_DIGITS = 18  # a trace of an exabyte


FROM = "FROM: "  # a string item, so it can never be read as a command (a skill may be named anything)
OUTCOMES = "OUTCOMES: "  # how each command ended: `status@ms` (0 done, >0 a shell exit status, -1 an error)
IN_REPLY_TO = "IN_REPLY_TO: "  # on a record of what the agent did: the message records of its turn


@dataclass
class Episode:
    id: str
    time: str
    message: str
    commands: list[Command] = field(default_factory=list)
    errors: str | None = None
    text: str = ""
    who: tuple[str, ...] = ()  # who sent the message(s)
    channel: str = ""
    outcomes: list[tuple[int, float]] = field(default_factory=list)  # per command: (status, ms); [] in old records
    in_reply_to: tuple[str, ...] = ()  # the message records of this record's turn, when they are others

    @property
    def offset(self) -> int:
        return int(self.id.removeprefix("ep-"))


def format_record(time: str, message: str, commands: list[Command], errors: str | None,
                  who: tuple[str, ...] = (), channel: str = "", outcomes: list[tuple[int, float]] = (),
                  in_reply_to: tuple[str, ...] = ()) -> str:
    parts = [quote(time), quote("HUMAN_MESSAGE: "), quote(message), *(str(c) for c in commands)]
    if errors:
        parts.append(quote("ERROR_FEEDBACK: " + errors))
    if who or channel:
        parts.append(quote(f"{FROM}{', '.join(who)} ({channel})"))
    if outcomes:
        parts.append(quote(OUTCOMES + " ".join(f"{int(status)}@{ms:.1f}" for status, ms in outcomes)))
    if in_reply_to:
        parts.append(quote(IN_REPLY_TO + " ".join(in_reply_to)))
    return "(" + " ".join(parts) + ")"


def _outcomes(text: str) -> list[tuple[int, float]]:
    out = []
    for item in text.removeprefix(OUTCOMES).split():
        status, _, ms = item.partition("@")
        try:
            out.append((int(status), float(ms)))
        except ValueError:
            return []  # not ours: no outcomes rather than wrong ones
    return out


def _senders(text: str) -> tuple[tuple[str, ...], str]:
    names, _, channel = text.removeprefix(FROM).rpartition(" (")
    return tuple(n for n in names.split(", ") if n), channel.removesuffix(")")


_FROM_ITEM = re.compile('"' + re.escape(FROM) + r'((?:[^"\\]|\\.)*)"')


def senders_of(line: str) -> tuple[tuple[str, ...], str]:
    """Who spoke in a record and on which channel, read off its FROM item without parsing the whole
    record (HISTORY may pass over many records of other people to fill its share)."""
    found = _FROM_ITEM.findall(line)
    if not found:
        return (), ""
    items = read_all(f'"{FROM}{found[-1]}"')  # the last: the record's own FROM item follows what was said
    return _senders(items[0].value) if items and isinstance(items[0], Str) else ((), "")


def parse_record(line: str, offset: int) -> Episode | None:
    """Read one record line; None for a torn or foreign line (never an exception)."""
    if not line.startswith('("'):
        return None
    try:
        nodes = read_all(line)
    except SexprError:
        return None
    if len(nodes) != 1 or not isinstance(nodes[0], Expr) or len(nodes[0].items) < 3:
        return None
    items = nodes[0].items
    if not (isinstance(items[0], Str) and isinstance(items[2], Str)):
        return None
    commands, errors, who, channel, outcomes, in_reply_to = [], None, (), "", [], ()
    for node in items[3:]:
        if isinstance(node, Expr) and node.items and isinstance(node.items[0], Sym):
            commands.append(Command(node.items[0].text, tuple(to_text(n) for n in node.items[1:])))
        elif isinstance(node, Str) and node.value.startswith("ERROR_FEEDBACK: "):
            errors = node.value[len("ERROR_FEEDBACK: ") :]
        elif isinstance(node, Str) and node.value.startswith(FROM):
            who, channel = _senders(node.value)
        elif isinstance(node, Str) and node.value.startswith(OUTCOMES):
            outcomes = _outcomes(node.value)
        elif isinstance(node, Str) and node.value.startswith(IN_REPLY_TO):
            in_reply_to = tuple(i for i in node.value.removeprefix(IN_REPLY_TO).split() if record_offset(i) is not None)
    return Episode(f"ep-{offset}", items[0].value, items[2].value, commands, errors, line, who, channel,
                   outcomes if len(outcomes) == len(commands) else [], in_reply_to)


def record_offset(record_id: str, prefixes: tuple[str, ...] = ("ep-",)) -> int | None:
    """The trace offset an id with one of `prefixes` names (None for anything else); a part of an older
    record (`ep-<offset>.<n>`) names its record. ASCII digits only and not too many: isdigit() takes
    other scripts' digits ("ep-０" forgot ep-0), and int() refuses a number past 4,300 digits with a
    ValueError where a lookup should find nothing."""
    for prefix in prefixes:
        digits, dot, part = record_id[len(prefix):].partition(".")
        if dot and not (part.isascii() and part.isdigit() and len(part) <= 6):
            continue
        if record_id.startswith(prefix) and digits.isascii() and digits.isdigit() and len(digits) <= MAX_OFFSET_DIGITS:
            return int(digits)
    return None


def part_id(offset: int, n: int) -> str:
    """The id of the n-th message (0: the first) of a record that holds several (`message_parts`)."""
    return f"ep-{offset}" if n == 0 else f"ep-{offset}.{n}"


def message_parts(episode: Episode) -> list[tuple[str, str]]:
    """A record's messages as (sender, text): one for a record written one message a record; for an
    older record that gathered a turn's messages, one for each group of lines that starts with one of
    its senders' `who: ` (the form a message of a named sender is shown in). A record whose lines do
    not all fall in such groups is one message: its text is never cut where no message began."""
    who = [w for w in episode.who if w]
    lines = episode.message.split("\n")
    if len(lines) < 2 or not who:
        return [(who[0] if len(who) == 1 else ", ".join(who), episode.message)] if who else [("", episode.message)]
    starts = []
    for n, line in enumerate(lines):
        speaker = next((w for w in who if line.startswith(f"{w}: ")), None)
        if speaker is not None:
            starts.append((n, speaker))
    if len(starts) < 2 or starts[0][0] != 0:
        return [(who[0] if len(who) == 1 else ", ".join(who), episode.message)]
    ends = [n for n, _ in starts[1:]] + [len(lines)]
    return [(speaker, "\n".join(lines[n:end])) for (n, speaker), end in zip(starts, ends, strict=True)]
