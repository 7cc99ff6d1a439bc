"""Small text and file helpers shared by skills, the trace and the prompt."""

from __future__ import annotations

import logging
import os
import re
import tempfile
import time
from datetime import datetime
from pathlib import Path

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"  # the one format of a time (memory/core/times.py: the time model)
UNCARRIABLE = re.compile("[\ud800-\udfff\x00]")
log = logging.getLogger(__name__)


def safe_text(text: str, source: str) -> str:
    """`text` with every lone UTF-16 surrogate and every NUL replaced by U+FFFD, the replacement logged
    with where it came from. Why: a surrogate is valid in a Python str (JSON `\\ud800`, stdin bytes
    decoded with surrogateescape) but not in UTF-8, so it breaks the trace write and panics hyperon,
    which aborts the process; hyperon passes strings as C strings, so a NUL silently ends the text (and
    a message after it in the same turn never reached the model). Every text from outside (model,
    channel, file, tool) passes here where it enters."""
    try:
        text.encode("utf-8")
        if "\x00" not in text:
            return text
    except UnicodeEncodeError:
        pass
    cleaned, count = UNCARRIABLE.subn("\ufffd", text)
    log.warning("replaced %d character(s) hyperon cannot carry (lone surrogates, NUL) in text from %s", count, source)
    return cleaned


def now_text(ts: float | None = None) -> str:
    """An instant (epoch seconds; now when None) as local wall-clock text in TIME_FORMAT."""
    return (datetime.fromtimestamp(ts) if ts is not None else datetime.now()).strftime(TIME_FORMAT)


def cap_head(text: str, limit: int, what: str = "output") -> str:
    """Keep the start of text; the cut is marked so the model knows something is missing."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {what} truncated: {len(text) - limit} more characters not shown ...]"


def one_line(text: str) -> str:
    """`text` with every character that is not printable (a line end, a tab, a terminal escape) shown as
    its escape: a name from outside (a file's, a process's command line) put in a one-line message
    keeps it one line and cannot drive the terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def at_hex(char: str) -> str:
    """A character a name may not hold, written as `@<its UTF-8 in hex>.` (`|` is `@7c.`): how scope and
    sender names keep such a character apart from the others instead of dropping it."""
    return "@" + char.encode("utf-8").hex() + "."


def read_head(path: Path, limit: int) -> tuple[bytes, bool]:
    """The file's first `limit` bytes, and whether it holds more: at most one byte past the limit is
    read, so a file of gigabytes, /dev/zero or a pipe that never ends is never read whole."""
    with path.open("rb") as file:
        raw = file.read(limit + 1)
    return raw[:limit], len(raw) > limit


def read_capped(path: Path, limit: int) -> bytes | None:
    """The file's bytes, or None when it holds more than `limit` (refused without being read whole)."""
    raw, more = read_head(path, limit)
    return None if more else raw


def quoted(text: str, limit: int = 200) -> str:
    """`text` quoted for an answer that names it (`no memories match '...'`), its start only: a query of
    20,000 characters came back whole, into the next prompt's results."""
    return repr(text[:limit]) + (f" (+{len(text) - limit} characters)" if len(text) > limit else "")


def cap_tail(text: str, limit: int) -> str:
    """Keep the end of text (newest results matter most), marking the cut."""
    if len(text) <= limit:
        return text
    return f"[... {len(text) - limit} earlier characters not shown ...]\n" + text[-limit:]


def append_synced(path: Path, text: str) -> None:
    """Append `text` (whole lines) and fsync before returning: what a caller acknowledges after this
    survives a crash; a crash (or a full disk) during it leaves at most a torn last line, which
    readers skip, and which the next append starts a new line after, so it never swallows that line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        if fh.seek(0, os.SEEK_END) > 0:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                text = "\n" + text
        fh.write(text.encode("utf-8"))
        fh.flush()
        os.fsync(fh.fileno())


def move_aside(path: Path, label: str = "corrupt") -> Path:
    """Rename a damaged file to `<name>.<label>-<unix second>`, or `...-<second>-2`, `-3` when that
    name is taken, and return where it went: two set aside in one second were one name, and the
    second rename replaced the first file, the evidence of what went wrong. (Looking before renaming
    is safe: one process holds a memory folder.)"""
    stamp = int(time.time())
    aside = path.with_name(f"{path.name}.{label}-{stamp}")
    n = 1
    while aside.exists() or aside.is_symlink():
        n += 1
        aside = path.with_name(f"{path.name}.{label}-{stamp}-{n}")
    os.replace(path, aside)
    return aside


def atomic_write(path: Path, text: str) -> None:
    """Write via a synced temporary file and rename, so a crash leaves the old or the new content."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
