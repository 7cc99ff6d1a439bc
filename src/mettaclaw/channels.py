"""Channels: where messages come from and replies go. One interface, `receive()` and `send()`.

Messages are queued as they arrive (a reader thread for the terminal), and `receive()` hands over
everything queued since the last turn, so a burst typed between two turns is never lost. Each
message keeps who sent it and the channel's name: they become the episode's `who` and `channel`.
"""

from __future__ import annotations

import os
import queue
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TextIO, runtime_checkable

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


# C0 and C1 controls but tab and line feed, and the bidirectional embeddings, overrides and isolates
# (U+202A-U+202E, U+2066-U+2069: the "Trojan Source" set), which reorder the text after them on the line
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with its control characters shown as escapes (`\\x1b`, `\\u202e`), tabs and line ends kept:
    what the model sends must not move the cursor, clear the screen or retitle the user's terminal, nor
    show its words in another order than they were sent (`\\u202eolleh` printed as "hello")."""
    return CONTROLS.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


class ChannelGone(ConnectionError):
    """Nobody can read what the agent says any more (the terminal's output was closed)."""


class TerminalChannel(QueueChannel):
    """stdin lines become messages; replies are printed. The console model reads the same lines."""

    def __init__(self, stdin: TextIO = sys.stdin, out: TextIO = sys.stdout) -> None:
        super().__init__(name="terminal")
        self._out = out
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(stdin,), daemon=True)
        self._reader.start()

    def _read(self, stdin: TextIO) -> None:
        """Lines as they are typed; bytes that are not UTF-8 become U+FFFD under any locale (a strict
        decode would kill this thread, a surrogateescape one would hand hyperon a surrogate)."""
        raw = getattr(stdin, "buffer", None)
        lines = (b.decode("utf-8", errors="replace") for b in raw) if raw is not None else stdin
        for line in lines:
            # a line's end is LF or CRLF (a file written on Windows, piped in): the CR kept was stored in
            # memories and, on the console, sent back shown as \x0d
            self._lines.put(line.removesuffix("\n").removesuffix("\r"))
        self._lines.put(None)

    def _pump(self) -> None:
        """Move typed lines into the message queue (when the console model is not reading them)."""
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return
            if line is None:
                self.closed = True
                return
            self.put(line)

    def receive(self) -> list[Message]:
        self._pump()
        return super().receive()

    def pending(self) -> bool:
        return not self._lines.empty() or super().pending()

    def read_model_line(self) -> str | None:
        """Blocking read of one line for the console provider; None at end of input (and ever after:
        a second read after Ctrl-D must not wait for a line that cannot come)."""
        if self.closed:
            return None
        line = self._lines.get()
        if line is None:
            self.closed = True
        return line

    def send(self, text: str) -> None:
        super().send(text)
        self._write(f"agent> {printable(text)}\n")

    def notice(self, text: str) -> None:
        super().notice(text)
        self._write(f"error: {printable(text)}\n")

    def _write(self, line: str) -> None:
        """A line out; ChannelGone once the output is closed (`run.py | head`, a pager quit, a dead
        tee), and the channel closed with it: the agent went on answering nobody, each send an
        'internal error BrokenPipeError', until its input ended."""
        try:
            self._out.write(line)
            self._out.flush()
        except (BrokenPipeError, ValueError) as err:  # ValueError: the stream object itself was closed
            self.closed = True
            raise ChannelGone("the terminal's output is closed: nobody reads what the agent says") from err


def make_channel(config: Any, env: Mapping[str, str] | None = None) -> QueueChannel:
    """The configured channel: the terminal, or IRC with the owner's secret from the environment."""
    if config.commchannel == "irc":
        from mettaclaw.irc import IRCChannel

        secret = (os.environ if env is None else env).get(config.ircSecretEnv) or None
        return IRCChannel(config.ircHost, config.ircPort, config.ircChannel, config.ircNick, secret)
    return TerminalChannel()
