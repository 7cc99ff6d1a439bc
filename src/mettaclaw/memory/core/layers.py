"""What every memory layer (the trace, the index, semantic memory, the statistics) shares: a name,
lookup by id, a summary, iteration, and announcements of what it captures and deletes.

A layer announces captures and deletions through callbacks (`Announcer`) and never knows who listens:
the dreamer and the statistics follow the trace, the index's mirror follows semantic memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

Listener = Callable[[str, Any], None]


@runtime_checkable
class MemoryLayer(Protocol):
    """What callers rely on in any layer; each layer's writes and searches are its own API."""

    name: str

    def get(self, record_id: str) -> Any | None: ...

    def stats(self) -> dict[str, Any]: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...

    def on_capture(self, listener: Listener) -> None: ...

    def on_delete(self, listener: Listener) -> None: ...


class Announcer:
    """Capture/deletion callbacks for a layer; a failing listener is logged, never breaks a write."""

    def __init__(self) -> None:
        self._capture: list[Listener] = []
        self._delete: list[Listener] = []

    def on_capture(self, listener: Listener) -> None:
        self._capture.append(listener)

    def on_delete(self, listener: Listener) -> None:
        self._delete.append(listener)

    def _announce(self, listeners: list[Listener], record_id: str, record: Any) -> None:
        import logging

        for listener in listeners:
            try:
                listener(record_id, record)
            except Exception:  # a listener's bug must not lose the write that triggered it
                logging.getLogger(__name__).exception("memory listener %r failed", listener)

    def announce_capture(self, record_id: str, record: Any) -> None:
        self._announce(self._capture, record_id, record)

    def announce_delete(self, record_id: str, record: Any) -> None:
        self._announce(self._delete, record_id, record)
