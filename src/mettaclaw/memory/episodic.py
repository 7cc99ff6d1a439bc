"""The episodic trace `history.metta`: one append-only record a turn, synced before the turn ends.

A record is one line, `("YYYY-MM-DD HH:MM:SS" "HUMAN_MESSAGE: " "<message>" (skill "arg") ... ["ERROR_FEEDBACK: ..."]
["FROM: <who>, <who> (<channel>)"])`, so a torn last record (power loss, kill -9) is one unreadable line that readers skip. The prompt tail and
time lookups seek instead of reading the whole file, so a trace of months costs the same as one of minutes.
An episode's id is its byte offset (`ep-<offset>`): stable, since the file is only appended to, except
that `erase` (forgetting an episode) blanks a record in place, keeping every offset.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mettaclaw.memory.layers import Announcer
from mettaclaw.parser import Command
from mettaclaw.sexpr import Expr, SexprError, Str, Sym, quote, read_all, to_text
from mettaclaw.textutil import cap_head

TIME_LEN = len("YYYY-MM-DD HH:MM:SS")
_CHUNK = 64 * 1024


FROM = "FROM: "  # a string item, so it can never be read as a command (a skill may be named anything)
OUTCOMES = "OUTCOMES: "  # how each command ended: `status@ms` (0 done, >0 a shell exit status, -1 an error)


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

    @property
    def offset(self) -> int:
        return int(self.id.removeprefix("ep-"))


def check_time(time: str) -> str:
    """`time` if every reader of the trace can parse it back (the index at open, the dream, export):
    a real date and time such as YYYY-MM-DD HH:MM:SS; ValueError naming it otherwise.

    Why the trace checks: a record is read for as long as the folder lives, and the index is caught up
    from the trace at open, so one record with an impossible time (2026-02-30) stopped the memory
    folder from opening at all (`bad time` from the index, the dream and export alike)."""
    from mettaclaw.memory.filters import parse_time
    from mettaclaw.memory.semantic.records import parse_time as record_time

    try:
        canonical = parse_time(time)[0]
        parse_time(canonical)  # the index keeps the canonical form and reads it again
        record_time(time)  # the dream's reading of an episode's time
    except (ValueError, OverflowError, TypeError):
        raise ValueError(f"bad time {time!r}: not a real date and time (YYYY-MM-DD HH:MM:SS)") from None
    return time


def format_record(time: str, message: str, commands: list[Command], errors: str | None,
                  who: tuple[str, ...] = (), channel: str = "", outcomes: list[tuple[int, float]] = ()) -> str:
    parts = [quote(time), quote("HUMAN_MESSAGE: "), quote(message), *(str(c) for c in commands)]
    if errors:
        parts.append(quote("ERROR_FEEDBACK: " + errors))
    if who or channel:
        parts.append(quote(f"{FROM}{', '.join(who)} ({channel})"))
    if outcomes:
        parts.append(quote(OUTCOMES + " ".join(f"{int(status)}@{ms:.1f}" for status, ms in outcomes)))
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


_FROM_ITEM = re.compile(r'"FROM: ((?:[^"\\]|\\.)*)"')


def _senders_of(line: str) -> tuple[tuple[str, ...], str]:
    """Who spoke in a record and on which channel, read off its FROM item without parsing the whole
    record (HISTORY may pass over many records of other people to fill its share)."""
    found = _FROM_ITEM.findall(line)
    if not found:
        return (), ""
    items = read_all(f'"FROM: {found[-1]}"')  # the last: the record's own FROM item follows what was said
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
    commands, errors, who, channel, outcomes = [], None, (), "", []
    for node in items[3:]:
        if isinstance(node, Expr) and node.items and isinstance(node.items[0], Sym):
            commands.append(Command(node.items[0].text, tuple(to_text(n) for n in node.items[1:])))
        elif isinstance(node, Str) and node.value.startswith("ERROR_FEEDBACK: "):
            errors = node.value[len("ERROR_FEEDBACK: ") :]
        elif isinstance(node, Str) and node.value.startswith(FROM):
            who, channel = _senders(node.value)
        elif isinstance(node, Str) and node.value.startswith(OUTCOMES):
            outcomes = _outcomes(node.value)
    return Episode(f"ep-{offset}", items[0].value, items[2].value, commands, errors, line, who, channel,
                   outcomes if len(outcomes) == len(commands) else [])


class EpisodicTrace(Announcer):
    """The trace file as a memory layer (`name = "episodic"`)."""

    name = "episodic"

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch(exist_ok=True)
        self._readable_cache: dict[str, bool] = {}

    # --- writing
    def append(self, time: str, message: str, commands: list[Command], errors: str | None = None,
               who: tuple[str, ...] = (), channel: str = "") -> str:
        """Append one record and fsync it; returns its episode id."""
        return self.append_episode(time, message, commands, errors, who, channel).id

    def append_episode(self, time: str, message: str, commands: list[Command], errors: str | None = None,
                       who: tuple[str, ...] = (), channel: str = "",
                       outcomes: list[tuple[int, float]] = ()) -> Episode:
        """`append`, returning the episode as written (`outcomes`: one (status, ms) a command); a time
        no reader could parse back is refused before anything is written (check_time)."""
        check_time(time)
        outcomes = list(outcomes) if len(outcomes) == len(commands) else []
        line = format_record(time, message, commands, errors, who, channel, outcomes)
        with open(self.path, "ab") as fh:
            offset = fh.tell()
            if offset and not self._ends_with_newline(offset):
                fh.write(b"\n")  # a torn record stays on its own (skipped) line
                offset += 1
            fh.write(line.encode("utf-8") + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        episode = Episode(f"ep-{offset}", time, message, list(commands), errors, line, tuple(who), channel, outcomes)
        self.announce_capture(episode.id, episode)
        return episode

    def _ends_with_newline(self, size: int) -> bool:
        with open(self.path, "rb") as fh:
            fh.seek(size - 1)
            return fh.read(1) == b"\n"

    # --- reading
    def _lines_from(self, offset: int) -> Iterator[tuple[int, str]]:
        with open(self.path, "rb") as fh:
            fh.seek(offset)
            pos = offset
            for raw in fh:
                yield pos, raw.decode("utf-8", errors="replace").rstrip("\n")
                pos += len(raw)

    def __iter__(self) -> Iterator[Episode]:
        return self.records_after(-1)

    def records_after(self, offset: int) -> Iterator[Episode]:
        """The readable records that start after byte `offset`, oldest first (seeks; -1: all)."""
        start = 0
        if offset >= 0:
            with open(self.path, "rb") as fh:
                fh.seek(offset)
                fh.readline()  # the record at `offset` itself
                start = fh.tell()
        for pos, line in self._lines_from(start):
            episode = parse_record(line, pos)
            if episode:
                yield episode

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def get(self, record_id: str) -> Episode | None:
        try:
            offset = int(record_id.removeprefix("ep-"))
        except ValueError:
            return None
        if offset < 0 or offset >= self.path.stat().st_size:
            return None
        if offset and not self._ends_with_newline(offset):
            return None  # not the start of a record
        return next((parse_record(line, pos) for pos, line in self._lines_from(offset)), None)

    def has(self, record_id: str) -> bool:
        """Whether a record starts at this id's offset and is not erased, read from its first bytes:
        `get` parses the whole record, and one may be megabytes long."""
        digits = record_id.removeprefix("ep-") if record_id.startswith("ep-") else ""
        if not (digits.isascii() and digits.isdigit()) or len(digits) > 18:  # as episode_index.offset_of
            return False
        offset = int(digits)
        with open(self.path, "rb") as fh:
            fh.seek(max(0, offset - 1))
            head = fh.read(3 if offset else 2)
        return head == (b'\n("' if offset else b'("')  # an erased record is blanked to spaces

    TAIL_SCAN_BYTES = 64 << 20  # how far back `tail` reads at most, however long the last records are

    def tail(self, max_chars: int, shown: Callable[[tuple[str, ...], str], bool] | None = None) -> str:
        """The last records fitting in max_chars, oldest first, read backwards by seek; with `shown`,
        only those whose senders and channel it accepts (whose turn it is may read them). A record
        longer than a quarter of max_chars is shown cut, with a marker: a pasted 50k-character file hid
        every older record (it did not fit, and the tail stopped there) for as long as it was in reach."""
        if max_chars <= 0:
            return ""
        share = max(200, max_chars // 4)
        kept: list[str] = []
        used = 0
        for line in self._lines_backwards():
            if not line or not self._readable(line):
                continue
            if shown is not None and not shown(*_senders_of(line)):
                continue
            line = cap_head(line, share, "record")
            if used + len(line) + 1 > max_chars:
                break
            kept.append(line)
            used += len(line) + 1
        return "\n".join(reversed(kept))

    def _lines_backwards(self, block: int = 1 << 16) -> Iterator[str]:
        """The file's lines, newest first, reading blocks backwards from the end (a line cut by the
        scan's limit is not one)."""
        with open(self.path, "rb") as fh:
            pos = fh.seek(0, os.SEEK_END)
            stop = max(0, pos - self.TAIL_SCAN_BYTES)
            pending: list[bytes] = []  # the line being read, its later pieces first
            while pos > stop:
                size = min(block, pos - stop)
                pos -= size
                fh.seek(pos)
                parts = fh.read(size).split(b"\n")
                if len(parts) == 1:
                    pending.append(parts[0])
                    continue
                yield (parts[-1] + b"".join(reversed(pending))).decode("utf-8", errors="replace")
                for raw in reversed(parts[1:-1]):
                    yield raw.decode("utf-8", errors="replace")
                pending = [parts[0]]
            if pos == 0 and pending:
                yield b"".join(reversed(pending)).decode("utf-8", errors="replace")

    def _readable(self, line: str) -> bool:
        """parse_record(line) is not None, remembered: the same lines are re-read every turn."""
        known = self._readable_cache.get(line)
        if known is None:
            if len(self._readable_cache) > 4096:
                self._readable_cache.clear()
            known = self._readable_cache[line] = parse_record(line, 0) is not None
        return known

    def _record_start_at_or_after(self, fh: Any, pos: int) -> tuple[int, str | None]:
        """The first readable record starting at or after byte pos: (offset, line)."""
        if pos > 0:
            fh.seek(pos - 1)
            if fh.read(1) != b"\n":
                fh.readline()
        else:
            fh.seek(0)
        while True:
            offset = fh.tell()
            raw = fh.readline()
            if not raw:
                return offset, None
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            if parse_record(line, offset):
                return offset, line

    def around(self, time: str, each_side: int) -> list[Episode]:
        """Records nearest `time` (`YYYY-MM-DD HH:MM:SS`, a prefix such as a date works too), by bisection."""
        size = self.path.stat().st_size
        with open(self.path, "rb") as fh:
            lo, hi = 0, size
            while lo < hi:  # first record whose time >= target
                mid = (lo + hi) // 2
                offset, line = self._record_start_at_or_after(fh, mid)
                if line is None or line[2 : 2 + TIME_LEN] >= time:
                    hi = mid
                else:
                    lo = offset + 1
            pivot, _ = self._record_start_at_or_after(fh, lo)
        before = self._before(pivot, each_side)
        after = []
        for pos, line in self._lines_from(pivot):
            episode = parse_record(line, pos)
            if episode:
                after.append(episode)
                if len(after) >= each_side + 1:
                    break
        return before + after

    def _before(self, offset: int, count: int) -> list[Episode]:
        """Up to `count` records ending before byte offset, reading a growing window backwards."""
        if count <= 0 or offset <= 0:
            return []
        window = _CHUNK
        with open(self.path, "rb") as fh:
            while True:
                start = max(0, offset - window)
                fh.seek(start)
                pieces = fh.read(offset - start).split(b"\n")
                pos, found = start, []
                for index, raw in enumerate(pieces):
                    if index > 0 or start == 0:  # the first piece of a later window may be cut
                        episode = parse_record(raw.decode("utf-8", errors="replace"), pos)
                        if episode:
                            found.append(episode)
                    pos += len(raw) + 1
                if len(found) >= count or start == 0:
                    return found[-count:]
                window *= 4

    # --- the layer protocol
    def store(self, record: Episode) -> str:
        return self.append(record.time, record.message, record.commands, record.errors, record.who, record.channel)

    def remove(self, record_id: str) -> bool:
        return self.erase(record_id) is not None

    def erase(self, record_id: str) -> Episode | None:
        """Forget one record for good: overwrite its line in place with spaces and sync. The file
        keeps its length, so every other episode keeps its id; readers skip a blank line as they skip
        a torn one, and a crash mid-erase leaves a line no reader accepts. The erased episode or None."""
        episode = self.get(record_id)
        if episode is None:
            return None
        with open(self.path, "r+b") as fh:
            fh.seek(episode.offset)
            length = len(fh.readline().rstrip(b"\n"))
            fh.seek(episode.offset)
            fh.write(b" " * length)
            fh.flush()
            os.fsync(fh.fileno())
        self._readable_cache.clear()
        self.announce_delete(record_id, episode)
        return episode

    def redact(self, record_id: str, forgotten: Callable[[Command], bool], marker: str = "[forgotten]") -> bool:
        """Rewrite one record in place with the arguments of the commands `forgotten` picks replaced by
        `marker` (a memory forgotten after its `remember` was recorded), padded with spaces to the old
        length so every other record keeps its offset; whether anything changed."""
        episode = self.get(record_id)
        if episode is None:
            return False
        if not any(map(forgotten, episode.commands)):
            return False
        with open(self.path, "r+b") as fh:
            fh.seek(episode.offset)
            length = len(fh.readline().rstrip(b"\n"))
            for shown in (marker, ""):  # the marker when it fits where the text was (`remember hi` has no room)
                commands = [Command(c.skill, tuple(shown for _ in c.args)) if forgotten(c) else c for c in episode.commands]
                line = format_record(episode.time, episode.message, commands, episode.errors, episode.who,
                                     episode.channel, episode.outcomes).encode("utf-8")
                if len(line) <= length:
                    break
            fh.seek(episode.offset)
            fh.write(line + b" " * (length - len(line)))
            fh.flush()
            os.fsync(fh.fileno())
        self._readable_cache.clear()
        return True

    def recall(self, limit: int = 10, **filters: Any) -> list[Episode]:
        time = filters.get("time")
        if time:
            return self.around(time, limit // 2)[:limit]
        text = self.tail(10**9 if limit > 1000 else limit * 4096)
        return [e for e in (parse_record(line, 0) for line in text.split("\n")) if e][-limit:]

    def recall_associated(self, seed_ids: list[str], limit: int = 10) -> list[Episode]:
        """Episodes next to the seeds in time: the trace's only association is adjacency."""
        out: list[Episode] = []
        for seed in seed_ids:
            episode = self.get(seed)
            if episode:
                out.extend(e for e in self.around(episode.time, 1) if e.id != seed)
        return out[:limit]

    def consolidate(self) -> dict[str, int]:
        return {}

    def stats(self) -> dict[str, Any]:
        first = next(iter(self), None)
        return {"records": len(self), "bytes": self.path.stat().st_size, "oldest": first.time if first else None}
