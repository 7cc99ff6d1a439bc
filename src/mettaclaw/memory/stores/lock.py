"""One process per memory folder: a second one would interleave trace records and lose Chroma vectors."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import sys
from pathlib import Path

from filelock import FileLock, Timeout

from mettaclaw.memory.errors import AgentLocked
from mettaclaw.textutil import atomic_write, now_text, one_line

HOLDER = "agent.lock.holder"  # who holds agent.lock, in a file beside it: filelock up to 3.29.7 (the pin
# allows 3.13) truncates the lock file at every attempt, so a refused process would erase what it came to read

log = logging.getLogger(__name__)


class FolderLock:
    """The memory folder's lock, held from `open_memory` to `Memory.close`; refused at once (no
    waiting) when another process has it, naming that process when it said who it is."""

    def __init__(self, memory_dir: Path) -> None:
        memory_dir.mkdir(parents=True, exist_ok=True)
        self.path = memory_dir / "agent.lock"
        self.holder_path = memory_dir / HOLDER
        self._lock = FileLock(str(self.path), timeout=0)
        try:
            self._lock.acquire()
        except Timeout:
            raise AgentLocked(
                f"{_holder(self.holder_path)} is already using the memory folder {str(memory_dir)!r} (lock file "
                f"{str(self.path)!r}); stop it first, or give this one its own folder with memoryDir=PATH"
            ) from None
        try:  # who holds it, for the message a second process gets; the lock holds without it
            atomic_write(self.holder_path, json.dumps({"pid": os.getpid(), "program": _program(),
                                                       "since": now_text(),
                                                       "started": _started(os.getpid())}) + "\n")
        except OSError as err:
            log.warning("cannot write who holds the memory folder's lock (%s): %s", self.holder_path, err)

    def release(self) -> None:
        if self._lock.is_locked:
            with contextlib.suppress(OSError):  # a stale one is told apart by its process being gone
                self.holder_path.unlink(missing_ok=True)
            self._lock.release()


def _program() -> str:
    """This process's command line as it was typed (`python -m mettaclaw.mcp transport=http`, `python
    run.py`), to 200 characters: what a user recognises in `ps` and can stop."""
    argv = list(getattr(sys, "orig_argv", sys.argv))
    return shlex.join([Path(argv[0]).name, *argv[1:]])[:200] if argv else "python"


def _started(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (Linux's /proc; None elsewhere): with the
    pid it names one process, where a pid alone may since have been given to another one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        return int(stat[stat.rindex(")") + 2 :].split()[19])  # field 22; the name in (...) may hold spaces
    except (OSError, ValueError, IndexError):
        return None


def _holder(path: Path) -> str:
    """Who holds the lock, as its holder wrote it: `process 123 (python run.py, since ...)`. A process
    that is gone (killed before it removed the file, its pid perhaps reused since), or a holder that has
    not written it yet, is no one to name: then the kinds of process it may be."""
    unknown = "another process (an agent, the MCP memory server, an export or an import)"
    try:
        said = json.loads(path.read_text(encoding="utf-8"))
        pid, program, since = int(said["pid"]), str(said["program"]), str(said["since"])
    except (OSError, ValueError, TypeError, KeyError):
        return unknown
    try:
        if pid <= 0:  # 0 and below name process groups, not a process
            return unknown
        os.kill(pid, 0)  # signal 0: only whether the process exists
    except PermissionError:  # it exists, under another user
        pass
    except (OSError, OverflowError):
        return unknown
    started = said.get("started")
    if isinstance(started, int) and _started(pid) not in (None, started):
        return unknown  # the holder is gone and its pid belongs to another process now
    return f"process {pid} ({one_line(program[:200])}, since {since[:19]})"
