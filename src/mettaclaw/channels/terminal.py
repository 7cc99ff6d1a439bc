"""The terminal: stdin lines become messages, replies are printed (control characters escaped)."""

from __future__ import annotations

import queue
import re
import sys
import threading
from typing import TextIO

from mettaclaw.messages import Message

from .base import ChannelGone, QueueChannel

# C0 and C1 controls but tab and line feed, and the bidirectional embeddings, overrides and isolates
# (U+202A-U+202E, U+2066-U+2069: the "Trojan Source" set), which reorder the text after them on the line
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with its control characters shown as escapes (`\\x1b`, `\\u202e`), tabs and line ends kept:
    what the model sends must not move the cursor, clear the screen or retitle the user's terminal, nor
    show its words in another order than they were sent (`\\u202eolleh` printed as "hello")."""
    return CONTROLS.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


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
