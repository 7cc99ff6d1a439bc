"""One agent per memory folder: a second one would interleave trace records and lose Chroma vectors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout


class AgentLocked(RuntimeError):
    """Another process holds the memory folder."""


@contextmanager
def memory_lock(memory_dir: Path) -> Iterator[Path]:
    """Hold the folder's lock for the block; refuse at once (no waiting) when another agent has it."""
    memory_dir.mkdir(parents=True, exist_ok=True)
    path = memory_dir / "agent.lock"
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise AgentLocked(
            f"another agent is already running on the memory folder {str(memory_dir)!r} (lock file {str(path)!r}); "
            "stop it first, or give this one its own folder with memoryDir=PATH"
        ) from None
    try:
        yield path
    finally:
        lock.release()
