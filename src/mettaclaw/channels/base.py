"""Channels: where messages come from and replies go. One interface, `receive()` and `send()`.

Messages are queued as they arrive (a reader thread for the terminal), and `receive()` hands over
everything queued since the last turn, so a burst typed between two turns is never lost. Each
message keeps who sent it and the channel's name: they become the episode's `who` and `channel`.
"""

from __future__ import annotations

import queue
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from mettaclaw.messages import Message


@runtime_checkable
class Channel(Protocol):
    closed: bool
    name: str

    def receive(self) -> list[Message]:
        """All non-empty messages queued since the last call, oldest first ([] when none)."""
        ...

    def send(self, text: str) -> str | None:
        """Say `text`; what of it the channel could not carry, if anything (the model reads it)."""
        ...

    def notice(self, text: str) -> None:
        """A line from the agent itself, not the model's (a failed model call): the person's to see."""
        ...

    def pending(self) -> bool:
        """Whether something arrived that the next `receive` would see (a message, the end of input)."""
        ...


class QueueChannel:
    """In-memory channel for tests and embedding: `put` messages, read `sent`."""

    def __init__(self, messages: Iterable[str | Message] = (), name: str = "queue") -> None:
        self.name = name
        self._queue: queue.Queue[Message] = queue.Queue()
        for message in messages:
            self._queue.put(Message(message, None, name) if isinstance(message, str) else message)
        self.sent: list[str] = []
        self.notices: list[str] = []
        self.closed = False

    def put(self, text: str | Message, who: str | None = None) -> None:
        """Queue a message: a text from `who` on this channel, or a whole Message (its own channel)."""
        self._queue.put(text if isinstance(text, Message) else Message(text, who, self.name))

    def receive(self) -> list[Message]:
        out = []
        while True:
            try:
                message = self._queue.get_nowait()
            except queue.Empty:
                return out
            if message.text.strip():
                out.append(message)

    def send(self, text: str) -> None:
        _keep(self.sent, text)

    def notice(self, text: str) -> None:
        """Kept, not sent: on a shared channel (IRC) the agent's own errors are not the room's."""
        _keep(self.notices, text)

    def pending(self) -> bool:
        return not self._queue.empty()


KEPT = 1000  # the newest lines `sent` and `notices` keep


def _keep(lines: list[str], text: str) -> None:
    """Append, dropping the oldest half past KEPT: every channel, the terminal and IRC included, kept
    everything the agent ever sent in a list for as long as it ran (tests read the newest)."""
    lines.append(text)
    if len(lines) > KEPT:
        del lines[: len(lines) - KEPT // 2]


class ChannelGone(ConnectionError):
    """Nobody can read what the agent says any more (the terminal's output was closed)."""
