"""The IRC channel: one room, messages queued by a reader thread, optional owner authentication.

With a secret set (from the environment only), the first nick that says `auth SECRET` becomes the
owner and only the owner is heard; everyone else is ignored. No `auth ...` line reaches the model,
whoever says it and whether or not it is right, so the secret never does.
The connection is re-established with back-off when the server drops it.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import re
import socket
import threading

from mettaclaw.channels import QueueChannel

log = logging.getLogger(__name__)
MAX_LINE = 400  # bytes of text per PRIVMSG, well under IRC's 512-byte line
# Any attempt to authenticate, right or wrong, by anyone: the owner repeating the secret, a typo in it,
# or an `auth` said while no secret is configured must not put the secret into the model's context.
AUTH_LINE = re.compile(r"\s*auth(\s|$)", re.IGNORECASE)


class IRCChannel(QueueChannel):
    def __init__(self, host: str, port: int, room: str, nick: str, secret: str | None = None,
                 connect_timeout: float = 10.0) -> None:
        super().__init__(name=f"irc:{room}")
        self.host, self.port, self.room, self.nick = host, port, room, nick
        self.secret = secret
        self.owner: str | None = None
        self.connect_timeout = connect_timeout
        self._sock: socket.socket | None = None
        self._send_lock = threading.Lock()
        self._joined = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def wait_joined(self, timeout: float) -> bool:
        return self._joined.wait(timeout)

    # --- connection
    def _run(self) -> None:
        delay = 1.0
        while not self._stop.is_set():
            try:
                self._session()
                delay = 1.0
            except OSError as err:
                log.warning("IRC connection to %s:%s failed: %s", self.host, self.port, err)
            self._joined.clear()
            if self._stop.wait(delay):
                break
            delay = min(delay * 2, 60.0)

    def _session(self) -> None:
        with socket.create_connection((self.host, self.port), timeout=self.connect_timeout) as sock:
            sock.settimeout(None)
            self._sock = sock
            self._raw(f"NICK {self.nick}")
            self._raw(f"USER {self.nick} 0 * :mettaclaw agent")
            buffer = b""
            while not self._stop.is_set():
                data = sock.recv(4096)
                if not data:
                    return
                buffer += data
                while b"\r\n" in buffer:
                    line, buffer = buffer.split(b"\r\n", 1)
                    self._handle(line.decode("utf-8", errors="replace"))

    def _raw(self, line: str) -> None:
        with self._send_lock:
            if self._sock is not None:
                self._sock.sendall(line.encode("utf-8") + b"\r\n")

    def _handle(self, line: str) -> None:
        prefix, command, params, trailing = parse_line(line)
        if command == "PING":
            self._raw(f"PONG :{trailing}")
        elif command == "001":
            self._raw(f"JOIN {self.room}")
        elif command == "JOIN" and prefix.split("!")[0] == self.nick:
            self._joined.set()
        elif command == "PRIVMSG" and params and params[0] == self.room:
            self._heard(prefix.split("!")[0], trailing)

    def _heard(self, nick: str, text: str) -> None:
        if AUTH_LINE.match(text):
            if self.secret and self.owner is None and self._is_secret(text):
                self.owner = nick
                self.send(f"{nick} is now my owner.")
            return
        if self.secret and nick != self.owner:
            return
        self.put(text, who=nick)

    def _is_secret(self, text: str) -> bool:
        assert self.secret is not None
        given = text.strip()[len("auth"):].strip()
        return hmac.compare_digest(given.encode("utf-8"), self.secret.encode("utf-8"))

    # --- the Channel interface
    def send(self, text: str) -> None:
        super().send(text)
        for line in text.splitlines() or [""]:
            data = line.encode("utf-8")
            for start in range(0, max(len(data), 1), MAX_LINE):
                chunk = data[start : start + MAX_LINE].decode("utf-8", errors="ignore")
                try:
                    self._raw(f"PRIVMSG {self.room} :{chunk}")
                except OSError as err:
                    log.warning("IRC send failed: %s", err)
                    return

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._raw("QUIT :bye")
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)
        self.closed = True


def parse_line(line: str) -> tuple[str, str, list[str], str]:
    """`:prefix COMMAND p1 p2 :trailing` -> (prefix, COMMAND, [p1, p2], trailing)."""
    prefix = ""
    if line.startswith(":"):
        prefix, _, line = line[1:].partition(" ")
    head, _, trailing = line.partition(" :")
    parts = head.split()
    return prefix, (parts[0].upper() if parts else ""), parts[1:], trailing
