"""The IRC channel: one room, messages queued by a reader thread, optional owner authentication.

With a secret set (from the environment only), the first nick that says `auth SECRET` becomes the
owner and only the owner is heard (say it in a private message to the bot, so the room does not see
the secret; other private messages are ignored, as the bot answers only in the room); everyone else is ignored. No `auth ...` line reaches the model,
whoever says it and whether or not it is right, so the secret never does. Ownership follows the person,
not the nick: a NICK change carries it to the new nick (the old nick is trusted no more, whoever takes
it), and the owner leaving the room (PART, KICK, QUIT) or the bot reconnecting ends it: auth again.
The connection is re-established with back-off when the server drops it; a kicked bot joins again
after a delay that doubles with each kick; a bot registered under a stand-in nick (`agent_`) takes
its own back when its holder leaves or changes nick, or at the server's next PING.
CTCP: an ACTION (`/me waves`) is heard as `*waves*`; other CTCP requests (VERSION, PING, DCC ...)
are machinery of clients, not words to the agent, and are dropped.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import queue
import re
import socket
import threading
import time
from collections.abc import Callable

from .base import QueueChannel

log = logging.getLogger(__name__)
MAX_LINE = 400  # bytes of text per PRIVMSG, well under IRC's 512-byte line
MAX_INBOUND = 64 * 1024  # a line from the server longer than this is dropped (IRC's own limit is 8 KiB)
REJOIN_DELAY = 5.0  # seconds before joining again after a kick; doubles with each kick of a connection
MAX_REJOIN_DELAY = 300.0
NICK_TRIES = 5  # nicks tried (`agent`, `agent_`, ...) before the connection is dropped and retried later
RFC_NICKLEN = 9  # the nick length every server accepts, for one that refuses a longer nick (432)
# What the bot says goes out paced as RFC 1459 (8.10) asks of a client: each line costs 2 s of a
# timer that may run at most 10 s ahead of the clock (a burst of 5 lines, then one every 2 s). Sent at
# once, a long answer got the bot disconnected for "Excess Flood" and the rest of it was lost.
LINE_COST_S, BURST_S = 2.0, 10.0
MAX_SEND_LINES = 15  # lines of one message (about 30 s paced); the rest is not sent, and the model is told
CLOSE_FLUSH_S = 10.0  # how long closing waits for what is still paced out
# C0 controls and DEL are dropped from what the bot says: \x01 would make a line a CTCP request
# (`\x01DCC SEND ...\x01`), NUL cuts lines on some servers. Kept: tab and the formatting codes clients
# only render (\x02 bold, \x03 colour, \x0f reset, \x1d italic, \x1f underline); line ends are split.
OUT_CONTROLS = re.compile("[\x00\x01\x04-\x08\x0a-\x0e\x10-\x1c\x1e\x7f]")
# The line ends str.splitlines knows but \x1d, which on IRC is italic, not a group separator.
LINE_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1e\x85\u2028\u2029]")
# Any attempt to authenticate, right or wrong, by anyone: the owner repeating the secret, a typo in it,
# or an `auth` said while no secret is configured must not put the secret into the model's context.
# `/me auth ...` (an ACTION, heard as `*auth ...*`) counts as one too.
AUTH_LINE = re.compile(r"\s*\*?auth(\s|$)", re.IGNORECASE)


class Pacer:
    """RFC 1459's flood control, as servers apply it to clients, kept on our side: how long to wait
    before the next line goes out."""

    def __init__(self, cost: float = LINE_COST_S, burst: float = BURST_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cost, self.burst, self.clock = cost, burst, clock
        self._timer = clock()

    def delay(self) -> float:
        """Seconds to wait before a line may go (0: now)."""
        return max(0.0, max(self._timer, self.clock()) - self.clock() - self.burst + self.cost)

    def sent(self) -> None:
        self._timer = max(self._timer, self.clock()) + self.cost


class IRCChannel(QueueChannel):
    def __init__(self, host: str, port: int, room: str, nick: str, secret: str | None = None,
                 connect_timeout: float = 10.0, pacer: Pacer | None = None) -> None:
        super().__init__(name=f"irc:{room}")
        self.host, self.port, self.room, self.nick = host, port, room, nick
        self._wanted_nick = nick  # each connection asks for it first; `nick` is the one the server gave
        self._nick_tries = 0
        self._registered = False
        self._rejoin_delay = REJOIN_DELAY
        self.secret = secret
        self.owner: str | None = None  # the owner's nick now
        self._owner_name: str | None = None  # the nick they authenticated as: their `who`, so their scope
        self._members: set[str] = set()  # folded nicks seen in the room, to see the owner leave it
        self.connect_timeout = connect_timeout
        self._sock: socket.socket | None = None
        self._send_lock = threading.Lock()
        self._joined = threading.Event()
        self._stop = threading.Event()
        self._pacer = pacer or Pacer()
        self._outbox: queue.Queue[str | None] = queue.Queue()  # room lines, paced out by the writer
        self._writer = threading.Thread(target=self._write_paced, name="irc-writer", daemon=True)
        self._writer.start()
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
            # While disconnected the bot saw no NICK or QUIT: whoever holds the owner's nick now may be
            # someone else, so the owner authenticates again on the new connection.
            self._disown("the connection was re-established")
            self._members.clear()
            self.nick, self._nick_tries, self._registered = self._wanted_nick, 0, False
            self._rejoin_delay = REJOIN_DELAY
            self._raw(f"NICK {self.nick}")
            self._raw(f"USER {self.nick} 0 * :mettaclaw agent")
            lines = LineBuffer(MAX_INBOUND)
            while not self._stop.is_set():
                data = sock.recv(4096)
                if not data:
                    return
                for line in lines.feed(data):
                    self._handle(line.decode("utf-8", errors="replace"))

    def _raw(self, line: str) -> None:
        with self._send_lock:
            if self._sock is not None:
                self._sock.sendall(line.encode("utf-8") + b"\r\n")

    def _write_paced(self) -> None:
        """Send the room's lines as the pacer allows, until closed (None). The protocol's own lines
        (PONG, JOIN, NICK) go at once through `_raw`: a PONG held behind a long answer would time out."""
        while (line := self._outbox.get()) is not None:
            time.sleep(self._pacer.delay())
            try:
                self._raw(line)
            except OSError as err:
                log.warning("IRC send failed: %s", err)
            self._pacer.sent()

    def _handle(self, line: str) -> None:
        prefix, command, params, trailing = parse_line(line)
        nick = prefix.split("!")[0]
        target = params[0] if params else trailing  # JOIN and PART may carry the room as trailing
        if command == "PING":
            self._raw(f"PONG :{trailing}")
            self._reclaim_nick()
        elif command == "001":
            # The first parameter is the nick the server registered us under, whatever we asked for.
            self.nick, self._registered = (params[0] if params else self.nick), True
            if self.nick != self._wanted_nick:
                log.warning("IRC: registered as %s, not %s", self.nick, self._wanted_nick)
            self._raw(f"JOIN {self.room}")
        elif command in ("432", "433", "436") and not self._registered:
            self._nick_refused(command, trailing)
        elif command == "JOIN" and same_nick(target, self.room):
            if same_nick(nick, self.nick):
                self._members.clear()  # the names reply (353) that follows lists who is there
                self._joined.set()
            self._members.add(fold(nick))
        elif command == "353" and len(params) >= 3 and same_nick(params[2], self.room):
            self._members.update(fold(name.lstrip("@+%~&!")) for name in trailing.split())
        elif command == "NICK":
            self._renamed(nick, trailing or target)
        elif command == "PART" and same_nick(target, self.room):
            self._left(nick, "left the room")
        elif command == "KICK" and len(params) >= 2 and same_nick(target, self.room):
            self._left(params[1], "was kicked")
            if same_nick(params[1], self.nick):
                self._rejoin_later()
        elif command == "QUIT":
            self._left(nick, "quit")
            if same_nick(nick, self._wanted_nick):
                self._reclaim_nick()
        elif command == "PRIVMSG" and params and same_nick(params[0], self.room):
            self._members.add(fold(nick))  # speaking in the room (+n, the usual mode) means being in it
            self._heard(nick, said(params, trailing))
        elif command == "PRIVMSG" and params and same_nick(params[0], self.nick):
            self._private(nick, said(params, trailing))

    def _private(self, nick: str, text: str) -> None:
        """A private message: only `auth SECRET` is taken (so the room never sees the secret). Anything
        else would be answered in the room, and be a second way in, so it is ignored."""
        if not (AUTH_LINE.match(text) and self.secret and self.owner is None and self._is_secret(text)):
            return
        if fold(nick) not in self._members:
            # Outside the room the bot would not see this nick change or quit, and would go on
            # trusting whoever takes it next.
            self._raw(f"NOTICE {nick} :join {self.room} first, then auth")
            return
        self._heard(nick, text)

    def _nick_refused(self, code: str, reason: str) -> None:
        """Without a nick the server registers nothing and the bot would sit connected and deaf: try
        another nick a few times, then drop the connection and let the back-off retry the wanted one."""
        log.warning("IRC: nick %s refused (%s %s)", self.nick, code, reason)
        self._nick_tries += 1
        if code == "432":  # erroneous: most often too long for this server; `_` would not help
            candidate = self.nick[:RFC_NICKLEN] if len(self.nick) > RFC_NICKLEN else None
        else:  # 433 in use, 436 collision
            candidate = self.nick + "_"
        if candidate is None or self._nick_tries >= NICK_TRIES:
            log.error("IRC: no nick accepted after %d tries; reconnecting later", self._nick_tries)
            raise ConnectionError(f"nick {self.nick} refused ({code})")
        self.nick = candidate
        self._raw(f"NICK {self.nick}")

    def _rejoin_later(self) -> None:
        """Join the room again after a delay (doubled for the next kick, so an operator who keeps
        kicking is not flooded with joins); not if the connection it was kicked on is gone by then."""
        delay, sock = self._rejoin_delay, self._sock
        self._rejoin_delay = min(delay * 2, MAX_REJOIN_DELAY)
        log.warning("IRC: kicked from %s; joining again in %g s", self.room, delay)

        def rejoin() -> None:
            if not self._stop.is_set() and self._sock is sock:
                with contextlib.suppress(OSError):
                    self._raw(f"JOIN {self.room}")

        timer = threading.Timer(delay, rejoin)
        timer.daemon = True
        timer.start()

    def _reclaim_nick(self) -> None:
        """Ask for the wanted nick again while going by a stand-in; the server's NICK echo makes it
        ours (`_renamed`), a refusal (433 once registered) is ignored until the next try."""
        if self._registered and not same_nick(self.nick, self._wanted_nick):
            self._raw(f"NICK {self._wanted_nick}")

    def _renamed(self, old: str, new: str) -> None:
        if not new:
            return
        if same_nick(old, self._wanted_nick) and not same_nick(new, self._wanted_nick):
            self._reclaim_nick()  # whoever held the bot's nick let it go
        if same_nick(old, self.nick):
            self.nick = new
        if fold(old) in self._members:
            self._members.discard(fold(old))
            self._members.add(fold(new))
        if self.owner is not None and same_nick(old, self.owner):
            log.info("IRC owner %s is now %s", old, new)
            self.owner = new

    def _left(self, nick: str, how: str) -> None:
        self._members.discard(fold(nick))
        if same_nick(nick, self.nick):
            self._joined.clear()
            self._disown(f"the bot {how}")
        elif self.owner is not None and same_nick(nick, self.owner):
            self._disown(f"the owner {how}")

    def _disown(self, why: str) -> None:
        if self.owner is not None:
            log.info("IRC owner %s is no longer trusted: %s; they must auth again", self.owner, why)
        self.owner = self._owner_name = None

    def _heard(self, nick: str, text: str) -> None:
        if AUTH_LINE.match(text):
            if self.secret and self.owner is None and self._is_secret(text):
                self.owner = self._owner_name = nick
                self.send(f"{nick} is now my owner.")
            return
        if self.secret:
            if self.owner is None or not same_nick(nick, self.owner):
                return
            nick = self._owner_name or nick  # one person, one `who`, whatever nick they go by now
        self.put(text, who=nick)

    def _is_secret(self, text: str) -> bool:
        assert self.secret is not None
        given = text.strip()[len("auth"):].strip()
        return hmac.compare_digest(given.encode("utf-8"), self.secret.encode("utf-8"))

    # --- the Channel interface
    def send(self, text: str) -> str | None:
        """Queue `text` for the room in IRC-sized lines, paced out (the turn does not wait for them); at
        most MAX_SEND_LINES of it, and then what was cut, for the model to read."""
        super().send(text)
        lines = LINE_BREAKS.split(text)
        if len(lines) > 1 and lines[-1] == "":
            lines.pop()  # a closing line end is no extra, empty line (as with splitlines)
        chunks = [chunk for line in lines for chunk in split_utf8(OUT_CONTROLS.sub("", line), MAX_LINE)]
        for chunk in chunks[:MAX_SEND_LINES]:
            self._outbox.put(f"PRIVMSG {self.room} :{chunk}")
        if len(chunks) <= MAX_SEND_LINES:
            return None
        cut = len(chunks) - MAX_SEND_LINES
        self._outbox.put(f"PRIVMSG {self.room} :[... {cut} more lines not sent: too long for IRC]")
        return (f"cut: IRC takes {MAX_SEND_LINES} lines of one message and {cut} more were not sent; "
                "write-file a long text and say where it is")

    def close(self) -> None:
        self._outbox.put(None)  # what was said before closing goes out first (paced, for a while)
        self._writer.join(timeout=CLOSE_FLUSH_S)
        self._stop.set()
        with contextlib.suppress(OSError):
            self._raw("QUIT :bye")
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)
        self.closed = True


class LineBuffer:
    """Bytes from the socket in, whole lines out. Only new bytes are searched for a line end (the held
    part has none), and a line past `limit` is dropped as it arrives: an endless line from the server
    would otherwise be rescanned on every read, slower and slower, while PINGs went unanswered."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held = bytearray()
        self._dropping = False  # inside an overlong line: discard up to its end

    def feed(self, data: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:  # LF ends a line; a CR before it is stripped
            if not self._dropping:
                self._held += data[start:end]
                if len(self._held) <= self.limit:
                    lines.append(bytes(self._held).rstrip(b"\r"))
                else:
                    self._too_long()
            self._held.clear()
            self._dropping = False
            start = end + 1
        if not self._dropping:
            self._held += data[start:]
            if len(self._held) > self.limit:
                self._too_long()
                self._held.clear()
                self._dropping = True
        return lines

    def _too_long(self) -> None:
        log.warning("IRC: dropped a line from the server longer than %d bytes", self.limit)


def split_utf8(text: str, limit: int) -> list[str]:
    """`text` in pieces of at most `limit` UTF-8 bytes, cut between characters (a cut inside one would
    lose it), at least one piece even for ""."""
    data = text.encode("utf-8")
    pieces, start = [], 0
    while True:
        end = min(start + limit, len(data))
        while start < end < len(data) and data[end] & 0xC0 == 0x80:
            end -= 1  # back off continuation bytes to the first byte of the character the cut splits
        if end == start:  # one character longer than `limit`: it goes whole rather than not at all
            end += 1
            while end < len(data) and data[end] & 0xC0 == 0x80:
                end += 1
        pieces.append(data[start:end].decode("utf-8"))
        if end >= len(data):
            return pieces
        start = end


def fold(nick: str) -> str:
    """A nick or room name as IRC compares them (RFC 1459 casemapping: `[]\\~` are the upper case of
    `{}|^`), so `Alice` and `alice` are one nick and one owner."""
    return nick.lower().translate(_FOLD)


_FOLD = str.maketrans("[]\\~", "{}|^")


def same_nick(a: str, b: str) -> bool:
    return fold(a) == fold(b)


def said(params: list[str], trailing: str) -> str:
    """A PRIVMSG's text: the trailing parameter, or a one-word text sent without its colon
    (`PRIVMSG #room hello`, which RFC 1459 allows), the last middle parameter. A CTCP ACTION
    (`\\x01ACTION waves\\x01`) reads `*waves*`; any other CTCP request reads "" (nothing said)."""
    text = trailing or (params[-1] if len(params) > 1 else "")
    if not text.startswith("\x01"):
        return text
    verb, _, rest = text.strip("\x01").partition(" ")
    return f"*{rest.strip()}*" if verb.upper() == "ACTION" and rest.strip() else ""


def parse_line(line: str) -> tuple[str, str, list[str], str]:
    """`:prefix COMMAND p1 p2 :trailing` -> (prefix, COMMAND, [p1, p2], trailing)."""
    prefix = ""
    if line.startswith(":"):
        prefix, _, line = line[1:].partition(" ")
    head, _, trailing = line.partition(" :")
    parts = head.split()
    return prefix, (parts[0].upper() if parts else ""), parts[1:], trailing
