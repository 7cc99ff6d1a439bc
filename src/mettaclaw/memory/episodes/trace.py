"""The episodic trace `history.metta`: append-only records, one a message (and one of what the agent did
in a turn that gathered several), each turn's synced in one write before the turn ends.

A record is one line (its format, its time and its id: records.py), so a torn last record (power
loss, kill -9) is one unreadable line that readers skip. The prompt tail and time lookups seek instead
of reading the whole file, so a trace of months costs the same as one of minutes.
An episode's id is its byte offset (`ep-<offset>`): stable, since the file is only appended to, except
that `erase` (forgetting an episode) blanks a record in place, keeping every offset.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mettaclaw.memory.core.layers import Announcer
from mettaclaw.memory.core.times import check_time
from mettaclaw.parser import Command
from mettaclaw.textutil import cap_head

from .records import TIME_LEN, Episode, format_record, parse_record, record_offset, senders_of

log = logging.getLogger(__name__)

_CHUNK = 64 * 1024
RUNS_SUFFIX = ".runs"  # beside the trace: the offsets of records earlier than the record before them
# beside the trace: the offset from which every record holds one message (records.py); older ones may hold a turn's
ONE_MESSAGE_SUFFIX = ".one-message-from"
TURN_RECORDS = 16  # how far past a message `turn_of` reads for its turn's record of what was done


class EpisodicTrace(Announcer):
    """The trace file as a memory layer (`name = "episodic"`)."""

    name = "episodic"

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch(exist_ok=True)
        self._readable_cache: dict[str, bool] = {}
        self.runs_path = self.path.with_name(self.path.name + RUNS_SUFFIX)
        self._last_time: str | None = None  # the last record's time, read at the first append
        self.one_message_from = self._one_message_from()

    def _one_message_from(self) -> int:
        """Where records of one message each begin: noted (synced) the first time this code opens a trace,
        at its end then; records before it are read apart by `records.message_parts`."""
        marker = self.path.with_name(self.path.name + ONE_MESSAGE_SUFFIX)
        try:
            return int(marker.read_text(encoding="utf-8").strip())
        except FileNotFoundError:
            pass
        except ValueError:
            log.warning("%s is not an offset: every record of %s is read as holding one message", marker, self.path)
            return 0
        size = self.path.stat().st_size
        with open(marker, "w", encoding="utf-8") as fh:
            fh.write(f"{size}\n")
            fh.flush()
            os.fsync(fh.fileno())
        return size

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
        return self.append_turn(time, [(message, who)], commands, errors, channel, outcomes)[-1]

    def append_turn(self, time: str, messages: list[tuple[str, tuple[str, ...]]], commands: list[Command],
                    errors: str | None = None, channel: str = "", outcomes: list[tuple[int, float]] = ()) -> list[Episode]:
        """One turn's records in one synced write: a record a message ((text, its senders)), the last
        also holding what the agent did; with several messages, what the agent did is a record of its
        own (no message, every sender, IN_REPLY_TO the message records). The episodes as written, in
        order; a time no reader could parse back is refused before anything is written (check_time)."""
        check_time(time)
        outcomes = list(outcomes) if len(outcomes) == len(commands) else []
        if self._last_time is None:
            last = next((raw for raw in self._lines_backwards() if self._readable(raw)), None)
            self._last_time = last[2 : 2 + TIME_LEN] if last else ""
        said = list(messages) or [("", ())]
        acted_apart = len(said) > 1 and bool(commands or errors)
        everyone = tuple(dict.fromkeys(w for _, who in said for w in who))
        written: list[Episode] = []
        with open(self.path, "ab") as fh:
            offset = fh.tell()
            if offset and not self._ends_with_newline(offset):
                fh.write(b"\n")  # a torn record stays on its own (skipped) line
                offset += 1
            if time < self._last_time:  # the clock went back: a new run of times starts here (around)
                self._note_run(offset)
            specs: list[tuple[str, tuple[str, ...], list[Command], str | None, list[tuple[int, float]]]]
            specs = [(text, who, [], None, []) for text, who in said]
            if acted_apart:
                specs.append(("", everyone, list(commands), errors, outcomes))
            else:
                specs[-1] = (*said[-1], list(commands), errors, outcomes)
            payload = bytearray()
            for n, (text, who, cmds, errs, outs) in enumerate(specs):
                replying = tuple(e.id for e in written) if acted_apart and n == len(specs) - 1 else ()
                line = format_record(time, text, cmds, errs, who, channel, outs, replying)
                written.append(Episode(f"ep-{offset + len(payload)}", time, text, cmds, errs, line, tuple(who),
                                       channel, outs, replying))
                payload += line.encode("utf-8") + b"\n"
            fh.write(bytes(payload))
            fh.flush()
            os.fsync(fh.fileno())
        self._last_time = time
        for episode in written:
            self.announce_capture(episode.id, episode)
        return written

    def _note_run(self, offset: int) -> None:
        """Note (synced, before the record is written) that the record at `offset` starts a new run."""
        with open(self.runs_path, "a", encoding="utf-8") as fh:
            fh.write(f"{offset}\n")
            fh.flush()
            os.fsync(fh.fileno())

    def note_runs(self) -> None:
        """Note every run of the whole trace, read once (an import writes the trace as it was exported,
        whose clock may have gone back)."""
        last = ""
        for episode in self:
            if episode.time < last:
                self._note_run(episode.offset)
            last = episode.time
        self._last_time = last

    def _runs(self, size: int) -> list[tuple[int, int]]:
        """The trace's runs of non-decreasing times, as (start, end) byte ranges."""
        try:
            text = self.runs_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return [(0, size)]
        starts = sorted({0, *(int(n) for n in text.split() if n.isdigit() and int(n) < size)})
        return list(zip(starts, [*starts[1:], size], strict=True))

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
        for pos, line in self._lines_from(self._next_line(offset) if offset >= 0 else 0):
            episode = parse_record(line, pos)
            if episode:
                yield episode

    def _next_line(self, offset: int) -> int:
        """Where the line after the one at byte `offset` starts."""
        with open(self.path, "rb") as fh:
            fh.seek(offset)
            fh.readline()
            return fh.tell()

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def get(self, record_id: str) -> Episode | None:
        offset = record_offset(record_id)
        if offset is None or offset >= self.path.stat().st_size:
            return None
        if offset and not self._ends_with_newline(offset):
            return None  # not the start of a record
        return next((parse_record(line, pos) for pos, line in self._lines_from(offset)), None)

    def has(self, record_id: str) -> bool:
        """Whether a record starts at this id's offset and is not erased, read from its first bytes:
        `get` parses the whole record, and one may be megabytes long."""
        offset = record_offset(record_id)
        if offset is None:
            return False
        with open(self.path, "rb") as fh:
            fh.seek(max(0, offset - 1))
            head = fh.read(3 if offset else 2)
        return head == (b'\n("' if offset else b'("')  # an erased record is blanked to spaces

    def erased(self, record_id: str) -> bool:
        """Whether a record started at this id's offset and was erased (`erase` blanks its line to
        spaces): a page linking a forgotten episode says so, where "no record" would read as a broken
        link. Read a chunk at a time: an erased record may have been megabytes long."""
        offset = record_offset(record_id)
        if offset is None or offset >= self.path.stat().st_size:
            return False
        with open(self.path, "rb") as fh:
            if offset:
                fh.seek(offset - 1)
                if fh.read(1) != b"\n":
                    return False  # not the start of a record
            blank = 0
            while chunk := fh.read(_CHUNK):
                line = chunk.split(b"\n", 1)[0]
                if line.strip(b" "):
                    return False  # a record, or one torn mid-erase
                blank += len(line)
                if len(line) < len(chunk):
                    break
        return blank > 0

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
            if shown is not None and not shown(*senders_of(line)):
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
        """Records nearest `time` (`YYYY-MM-DD HH:MM:SS`, a prefix such as a date works too), oldest
        first, by bisection of each run of non-decreasing times: where the clock went back between
        turns, one bisection over the whole file found records of another time (`episodes`, and
        forgetting a memory, which looks up the turn that stored it, missed theirs)."""
        runs = self._runs(self.path.stat().st_size)
        if len(runs) == 1:
            return self._around_in(time, each_side, *runs[0])
        found = sorted((e for run in runs for e in self._around_in(time, each_side, *run)),
                       key=lambda e: (e.time, e.offset))
        at = sum(1 for e in found if e.time < time)
        return found[max(0, at - each_side) : at + each_side + 1]

    def holding(self, skill: str, *words: str) -> list[Episode]:
        """The readable records with a `skill` command, oldest first, in one pass over the file that
        parses only the lines naming it (and holding one of `words`, in any case, when any are given:
        parsing every remember of a long trace holds the memory's lock for seconds, docs/decisions/0019)."""
        needle, found, folded = f"({skill} ".encode(), [], [w.casefold() for w in words]
        with open(self.path, "rb") as fh:
            pos = 0
            for raw in fh:
                if needle in raw:
                    line = raw.decode("utf-8", errors="replace")
                    cased = line.casefold()
                    if not folded or any(w in cased for w in folded):
                        episode = parse_record(line.rstrip("\n"), pos)
                        if episode and any(c.skill == skill for c in episode.commands):
                            found.append(episode)
                pos += len(raw)
        return found

    def turn_of(self, record_id: str, within: int = TURN_RECORDS) -> Episode | None:
        """The record of what the agent did in the turn of a message record: the record itself when it
        holds what was done (a turn of one message, or one written before a record held one message),
        else the first of the next `within` records that does, when its IN_REPLY_TO names this one.
        None when there is none: nothing was done, or the turn gathered more than `within` messages.
        Read forward by seek from the record: a turn's records are written together, in one write, at
        one time, so a record of another time ends the search unparsed (parsing the next `within`
        records, long ones among them, for every turn that did nothing was most of a turn's cost)."""
        episode = self.get(record_id)
        if episode is None:
            return None
        if episode.commands or episode.errors or episode.in_reply_to:
            return episode
        start = self._next_line(episode.offset)
        for n, (pos, line) in enumerate(self._lines_from(start)):
            if n >= within or (line.startswith('("') and line[2 : 2 + TIME_LEN] != episode.time):
                break
            later = parse_record(line, pos)
            if later is None:
                continue
            if later.in_reply_to:
                return later if episode.id in later.in_reply_to else None
            if later.commands or later.errors:
                return None  # a later turn's record of what was done: this message's turn did nothing
        return None

    def latest(self, count: int) -> list[Episode]:
        """The last `count` records written, oldest first: what just happened, whatever times the clock
        gave them (`around` a time after all of them gives the latest by time)."""
        return self._before(self.path.stat().st_size, count)

    def _around_in(self, time: str, each_side: int, start: int, end: int) -> list[Episode]:
        """`around` within the records starting in [start, end), whose times do not decrease."""
        with open(self.path, "rb") as fh:
            lo, hi = start, end
            while lo < hi:  # first record whose time >= target
                mid = (lo + hi) // 2
                offset, line = self._record_start_at_or_after(fh, mid)
                if line is None or offset >= end or line[2 : 2 + TIME_LEN] >= time:
                    hi = mid
                else:
                    lo = offset + 1
            pivot = min(self._record_start_at_or_after(fh, lo)[0], end)
        before = [e for e in self._before(pivot, each_side) if e.offset >= start]
        after = []
        for pos, line in self._lines_from(pivot):
            if pos >= end:
                break
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

    # --- the layer protocol (core/layers.MemoryLayer): get, stats, len, iter, on_capture, on_delete
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
        length so every other record keeps its offset; whether anything changed.

        The record is read again byte for byte (bytes that are not UTF-8 kept as they are), and a
        rewrite that would still be longer than the record (a form written by hand that the writer
        writes longer) is not made, said in the log: a record holding bytes that are not UTF-8 was
        written back with each one as a 3-byte replacement character, ran over the next record, and
        both were lost."""
        episode = self.get(record_id)
        if episode is None or not any(map(forgotten, episode.commands)):
            return False
        with open(self.path, "r+b") as fh:
            fh.seek(episode.offset)
            raw = fh.readline().rstrip(b"\n")
            exact = parse_record(raw.decode("utf-8", errors="surrogateescape"), episode.offset) or episode
            line = _redacted(exact, forgotten, marker, len(raw))
            if line is None:
                log.error("trace record %s keeps what was forgotten: written again without it, it would be longer "
                          "than its %d bytes and run over the next record", record_id, len(raw))
                return False
            fh.seek(episode.offset)
            fh.write(line + b" " * (len(raw) - len(line)))
            fh.flush()
            os.fsync(fh.fileno())
        self._readable_cache.clear()
        return True

    def stats(self) -> dict[str, Any]:
        first = next(iter(self), None)
        return {"records": len(self), "bytes": self.path.stat().st_size, "oldest": first.time if first else None}


def _redacted(episode: Episode, forgotten: Callable[[Command], bool], marker: str, length: int) -> bytes | None:
    """The record's line with the arguments `forgotten` picks replaced by `marker`, or by nothing when the
    marker does not fit where the text was (`remember hi` has no room); None if neither fits in `length` bytes."""
    for shown in (marker, ""):
        commands = [Command(c.skill, tuple(shown for _ in c.args)) if forgotten(c) else c for c in episode.commands]
        line = format_record(episode.time, episode.message, commands, episode.errors, episode.who,
                             episode.channel, episode.outcomes, episode.in_reply_to).encode("utf-8", errors="surrogateescape")
        if len(line) <= length:
            return line
    return None
