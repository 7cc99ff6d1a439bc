"""One process per memory folder: a second one would interleave trace records and lose Chroma vectors."""

from __future__ import annotations

from pathlib import Path

from filelock import FileLock, Timeout


class AgentLocked(RuntimeError):
    """Another process holds the memory folder."""


class FolderLock:
    """The memory folder's lock, held from `open_memory` to `Memory.close`; refused at once (no
    waiting) when another process has it."""

    def __init__(self, memory_dir: Path) -> None:
        memory_dir.mkdir(parents=True, exist_ok=True)
        self.path = memory_dir / "agent.lock"
        self._lock = FileLock(str(self.path), timeout=0)
        try:
            self._lock.acquire()
        except Timeout:
            raise AgentLocked(
                f"another agent is already running on the memory folder {str(memory_dir)!r} (lock file "
                f"{str(self.path)!r}); stop it first, or give this one its own folder with memoryDir=PATH"
            ) from None

    def release(self) -> None:
        if self._lock.is_locked:
            self._lock.release()
