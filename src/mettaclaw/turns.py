"""The turn log: one JSON line a turn in `memory/turns.jsonl` (what the model was shown, what it said,
what each command did and how long each step took), rotated by size; and `python -m mettaclaw.turns
tail [-n N] [key=value ...]` to read the last turns.

Why a separate log: the trace (`history.metta`) is the agent's own memory, in the form the model reads
back; this is for the person running the agent, who wants to see the prompt's parts and sizes, the
reply and the timings without reading MeTTa. The standard library's rotating handler does the
rotation, so a long run keeps at most `turnLogMB` x (1 + BACKUPS) megabytes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import logging.handlers
import os
import re
import sys
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from mettaclaw.messages import ANONYMOUS

BACKUPS = 3
EPISODE_ID = re.compile(rb'"episode_id": "([^"]*)"')  # as json.dumps writes a record's key
MAX_TEXT = 4000  # characters of a reply, a message or a result kept in a line


def clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more characters]"


class TurnLog:
    """Appends turn records to `path` (rotated past `max_mb`); `max_mb=0` keeps no log."""

    def __init__(self, path: Path, max_mb: int) -> None:
        self.path = Path(path)
        self._log: logging.Logger | None = None
        if max_mb > 0:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handler = logging.handlers.RotatingFileHandler(self.path, maxBytes=max_mb * 1024 * 1024,
                                                           backupCount=BACKUPS, encoding="utf-8")
            handler.setFormatter(logging.Formatter("%(message)s"))
            self._log = logging.getLogger(f"mettaclaw.turns.{id(self)}")
            self._log.propagate = False
            self._log.setLevel(logging.INFO)
            self._log.addHandler(handler)

    def write(self, record: dict[str, Any]) -> None:
        if self._log is not None:
            # ASCII escapes: no text (a lone surrogate from a model, say) can make a line unwritable
            self._log.info(json.dumps(record, ensure_ascii=True, default=str))

    def close(self) -> None:
        if self._log is not None:
            for handler in list(self._log.handlers):
                handler.close()
                self._log.removeHandler(handler)


def files(path: Path) -> list[Path]:
    """The log's files, oldest first (the rotated ones, then the current one)."""
    return [Path(f"{path}.{n}") for n in range(BACKUPS, 0, -1)] + [Path(path)]


def erase(path: Path, episode_ids: Collection[str]) -> int:
    """Overwrite, in every file of the log, the records of these episodes (forgotten turns) with one
    that says only which turn was forgotten, padded with spaces to the old length, in place: the
    handler appending to the file meanwhile is not disturbed. How many records were erased."""
    wanted = {e.encode() for e in episode_ids}
    erased = 0
    for file in files(path):
        if not wanted or not file.is_file():
            continue
        spots, offset = [], 0
        with open(file, "r+b") as fh:
            for line in fh:
                if (found := EPISODE_ID.search(line)) and found[1] in wanted:
                    with contextlib.suppress(ValueError):
                        spots.append((offset, len(line.rstrip(b"\n")), json.loads(line)))
                offset += len(line)
            for at, length, record in spots:
                stub = json.dumps({"turn": record.get("turn"), "time": record.get("time"),
                                   "episode_id": record.get("episode_id"), "forgotten": True}).encode()
                fh.seek(at)
                fh.write(stub + b" " * max(0, length - len(stub)))
            fh.flush()
            os.fsync(fh.fileno())
        erased += len(spots)
    return erased


def read(path: Path) -> Iterator[dict[str, Any]]:
    """Every readable record, oldest first, the rotated files included (a torn line is skipped)."""
    for file in files(path):
        if not file.is_file():
            continue
        with open(file, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue


def newest(path: Path, skip: int, count: int) -> tuple[list[dict[str, Any]], bool]:
    """`count` records after the newest `skip`, newest first, and whether older ones remain. Reads the
    files newest first and parses only the lines it returns, so a page costs one file read or two."""
    out: list[dict[str, Any]] = []
    seen = 0
    for file in reversed(files(path)):
        if not file.is_file():
            continue
        lines = [ln for ln in file.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
        for line in reversed(lines):
            if seen >= skip + count:
                return out, True
            seen += 1
            if seen > skip:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    return out, False


def render(record: dict[str, Any]) -> str:
    """One turn for a person to read."""
    head = f"── turn {record.get('turn', '?')} at {record.get('time', '?')}"
    if record.get("model_ms") is not None:
        head += f" · model {record['model_ms']:.0f} ms"
    if record.get("tokens"):
        head += " · tokens " + ", ".join(f"{k} {v}" for k, v in record["tokens"].items())
    head += f" · turn {record.get('turn_ms', 0):.0f} ms"
    lines = [head] + (["  (forgotten)"] if record.get("forgotten") else [])
    for m in record.get("messages", []):
        lines.append(f"  {m.get('who') or ANONYMOUS} ({m.get('channel', '')}): {m.get('text', '')}")
    sections = record.get("prompt_sections", {})
    if sections:
        lines.append("  prompt: " + ", ".join(f"{k} {v}" for k, v in sections.items()) + " chars")
    if record.get("reply"):
        lines.append("  reply: " + record["reply"].replace("\n", "\n         "))
    for c in record.get("commands", []):
        lines.append(f"  {c['skill']} ({c['ms']:.0f} ms) -> {c['result'][:300]}".replace("\n", " | "))
    for e in record.get("errors", []):
        lines.append(f"  error: {e[:300]}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    from mettaclaw.config import ConfigError, load_config

    if not argv or argv[0] != "tail":
        print("usage: python -m mettaclaw.turns tail [-n N] [key=value ...]", file=sys.stderr)
        return 2
    args, count = argv[1:], 10
    if args[:1] == ["-n"]:
        try:
            count = int(args[1])
        except (IndexError, ValueError):
            print("error: -n needs a number of turns", file=sys.stderr)
            return 2
        args = args[2:]
    try:
        config = load_config(args)
    except ConfigError as err:
        print(f"config error: {err}", file=sys.stderr)
        return 2
    path = config.memory_path("turns.jsonl")
    try:
        records = list(read(path))[-count:] if count > 0 else []
    except OSError as err:  # memoryDir a name past the system's limit, a log unreadable: it was a traceback
        print(f"error: the turn log {str(path)!r} cannot be read: {err.strerror or err}", file=sys.stderr)
        return 2
    if not records:
        print(f"no turns logged in {path}")
    for record in records:
        print(render(record))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
