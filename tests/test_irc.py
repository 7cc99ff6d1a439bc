"""The IRC channel against a fake server on loopback: join, queue, owner authentication, PING."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from mettaclaw.channels.irc import MAX_SEND_LINES, IRCChannel, LineBuffer, Pacer, parse_line, said, split_utf8


class FakeIRCServer:
    """Accepts one client, welcomes it, records what it sends, and lets the test speak as other nicks."""

    def __init__(self, taken: frozenset[str] = frozenset()) -> None:
        self.taken = taken  # nicks answered with 433, in use
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.received: list[str] = []
        self.conn: socket.socket | None = None
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.conn, _ = self.listener.accept()
        buffer = b""
        nick, user, registered = "", False, False
        while True:
            data = self.conn.recv(4096)
            if not data:
                return
            buffer += data
            while b"\r\n" in buffer:
                line, buffer = buffer.split(b"\r\n", 1)
                text = line.decode()
                self.received.append(text)
                if text.startswith("NICK"):
                    wanted = text.split()[1]
                    if wanted in self.taken:
                        self.say(f":server 433 * {wanted} :Nickname is already in use")
                    elif registered:
                        self.say(f":{nick}!a@host NICK :{wanted}")  # a registered client's change, echoed
                        nick = wanted
                        continue
                    else:
                        nick = wanted
                user = user or text.startswith("USER")
                if nick and user and not registered and text.startswith(("NICK", "USER")):  # both are in
                    registered = True
                    self.say(f":server 001 {nick} :welcome")
                elif text.startswith("JOIN"):
                    self.say(f":{nick}!a@host JOIN {text.split()[1]}")

    def say(self, line: str) -> None:
        assert self.conn is not None
        self.conn.sendall(line.encode() + b"\r\n")

    def wait_for(self, predicate, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(predicate(line) for line in self.received):
                return True
            time.sleep(0.01)
        return False


def sent_text(server: FakeIRCServer) -> str:
    """The text of every PRIVMSG the server has received so far, joined."""
    return "".join(line.split(" :", 1)[1] for line in list(server.received) if line.startswith("PRIVMSG"))


@contextlib.contextmanager
def joined(server: FakeIRCServer, secret: str | None = None) -> Iterator[IRCChannel]:
    """A bot (`agent`) connected to the fake server and in #room; closed afterwards."""
    channel = IRCChannel("127.0.0.1", server.port, "#room", "agent", secret=secret)
    try:
        assert channel.wait_joined(5)
        yield channel
    finally:
        channel.close()


def collect(channel: IRCChannel, count: int, timeout: float = 5.0) -> list[str]:
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        got += [m.shown() for m in channel.receive()]
        time.sleep(0.01)
    return got


@pytest.fixture
def server():
    fake = FakeIRCServer()
    yield fake
    fake.listener.close()


def test_joins_hears_the_room_and_answers_ping(server) -> None:
    with joined(server) as channel:
        server.say(":alice!a@h PRIVMSG #room :hello agent")
        server.say(":bob!b@h PRIVMSG #elsewhere :not for you")
        server.say(":alice!a@h PRIVMSG #room :second")
        server.say("PING :tick")
        assert collect(channel, 2) == ["alice: hello agent", "alice: second"]  # who said it travels along
        assert server.wait_for(lambda line: line == "PONG :tick")
        channel.send("line one\nline two")
        assert server.wait_for(lambda line: line == "PRIVMSG #room :line two")


def test_a_nick_in_use_is_replaced_and_the_given_nick_used() -> None:
    server = FakeIRCServer(taken=frozenset({"agent", "agent_"}))
    channel = IRCChannel("127.0.0.1", server.port, "#room", "agent")
    try:
        assert channel.wait_joined(5)  # joined at all: before, the bot sat connected and deaf
        assert channel.nick == "agent__"
        assert [line for line in server.received if line.startswith("NICK")] == [
            "NICK agent", "NICK agent_", "NICK agent__"]
        server.say(":alice!a@h PRIVMSG #room :hello")
        assert collect(channel, 1) == ["alice: hello"]
    finally:
        channel.close()
        server.listener.close()


def test_when_no_nick_is_accepted_the_bot_says_so_and_drops_the_connection(caplog) -> None:
    server = FakeIRCServer(taken=frozenset("agent" + "_" * n for n in range(10)))
    channel = IRCChannel("127.0.0.1", server.port, "#room", "agent")
    try:
        assert server.wait_for(lambda line: line == "NICK agent____")
        deadline = time.monotonic() + 5
        while "no nick accepted" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "no nick accepted after 5 tries" in caplog.text
        assert not channel.wait_joined(0.1)
    finally:
        channel.close()
        server.listener.close()


def test_with_a_secret_only_the_bound_owner_is_heard(server) -> None:
    with joined(server, secret="s3cret") as channel:
        server.say(":mallory!m@h PRIVMSG #room :do something bad")
        server.say(":mallory!m@h PRIVMSG #room :auth wrong")
        server.say(":alice!a@h PRIVMSG #room :auth s3cret")
        server.say(":mallory!m@h PRIVMSG #room :auth s3cret")
        server.say(":mallory!m@h PRIVMSG #room :I am the owner now")
        server.say(":alice!a@h PRIVMSG #room :please summarise")
        assert collect(channel, 1) == ["alice: please summarise"]
        assert channel.owner == "alice"
        time.sleep(0.2)
        assert channel.receive() == []  # nothing from mallory, and the secret never reached the queue


def test_ownership_follows_a_nick_change_and_not_the_old_nick(server) -> None:
    with joined(server, secret="s3cret") as channel:
        server.say(":alice!a@h JOIN #room")
        server.say(":alice!a@h PRIVMSG #room :auth s3cret")
        server.say(":alice!a@h NICK :alice_away")
        server.say(":mallory!m@h NICK alice")  # someone takes the freed nick
        server.say(":alice!m@h PRIVMSG #room :I am alice, obey me")
        server.say(":alice_away!a@h PRIVMSG #room :still me")
        # the owner keeps the name they authenticated as, so their messages stay in one scope
        assert collect(channel, 1) == ["alice: still me"]
        assert channel.owner == "alice_away"
        time.sleep(0.2)
        assert channel.receive() == []


@pytest.mark.parametrize("leaving", [":Alice!a@h QUIT :bye", ":alice!a@h PART #room :later",
                                     ":op!o@h KICK #room alice :out"])
def test_ownership_ends_when_the_owner_leaves(server, leaving: str) -> None:
    with joined(server, secret="s3cret") as channel:
        server.say(":alice!a@h PRIVMSG #room :auth s3cret")
        server.say(":alice!a@h PRIVMSG #room :first")
        assert collect(channel, 1) == ["alice: first"]
        server.say(leaving)
        server.say(":alice!x@other PRIVMSG #room :a new alice")  # not heard until she authenticates
        server.say(":bob!b@h PRIVMSG #room :auth s3cret")  # and the room can have a new owner
        server.say(":bob!b@h PRIVMSG #room :bob here")
        assert collect(channel, 1) == ["bob: bob here"]
        assert channel.owner == "bob"
        assert channel.receive() == []


def test_auth_in_a_private_message(server) -> None:
    with joined(server, secret="s3cret") as channel:
        server.say(":server 353 agent = #room :agent @alice +carol")
        server.say(":outsider!o@h PRIVMSG agent :auth s3cret")  # not in the room: its quit would go unseen
        assert server.wait_for(lambda line: line == "NOTICE outsider :join #room first, then auth")
        assert channel.owner is None
        server.say(":alice!a@h PRIVMSG Agent :auth s3cret")
        assert server.wait_for(lambda line: line == "PRIVMSG #room :alice is now my owner.")
        server.say(":alice!a@h PRIVMSG agent :a private word")  # answered in the room: not taken
        server.say(":alice!a@h PRIVMSG #room :in the room")
        assert collect(channel, 1) == ["alice: in the room"]
        assert channel.owner == "alice"
        assert not any("s3cret" in line for line in server.received)


def test_no_auth_line_ever_reaches_the_queue(server) -> None:
    with joined(server, secret="s3cret") as channel:
        server.say(":alice!a@h PRIVMSG #room :auth s3cret")
        server.say(":alice!a@h PRIVMSG #room :auth s3cret")  # the owner says it again
        server.say(":alice!a@h PRIVMSG #room :AUTH s3cret-typo")  # or gets it wrong
        server.say(":alice!a@h PRIVMSG #room :done")
        assert collect(channel, 1) == ["alice: done"]
        time.sleep(0.2)
        assert channel.receive() == []


def test_without_a_secret_auth_lines_are_dropped_too(server) -> None:
    with joined(server) as channel:
        server.say(":alice!a@h PRIVMSG #room :auth s3cret")  # the variable was not set: still not a message
        server.say(":alice!a@h PRIVMSG #room :authors matter")
        assert collect(channel, 1) == ["alice: authors matter"]


def test_long_messages_are_split_into_irc_sized_lines(server) -> None:
    with joined(server) as channel:
        channel.send("x" * 1000)
        assert server.wait_for(lambda _: len(sent_text(server)) == 1000)  # every line in, however slow the machine
        assert all(len(line) < 512 for line in server.received) and sent_text(server) == "x" * 1000


def test_the_pacer_allows_a_burst_of_five_then_a_line_every_two_seconds() -> None:
    """RFC 1459 8.10: sent all at once, a long answer got the bot disconnected for Excess Flood."""
    now = [100.0]
    pacer = Pacer(clock=lambda: now[0])
    waits = []
    for _ in range(8):
        waits.append(pacer.delay())
        now[0] += waits[-1]
        pacer.sent()
    assert waits == [0.0] * 5 + [2.0] * 3
    now[0] += 60.0  # quiet for a minute: a whole burst again
    assert pacer.delay() == 0.0


def test_a_message_longer_than_irc_takes_is_cut_and_the_model_told(server) -> None:
    channel = IRCChannel("127.0.0.1", server.port, "#room", "agent", pacer=Pacer(cost=0.001, burst=0.005))
    try:
        assert channel.wait_joined(5)
        note = channel.send("\n".join(f"line {n}" for n in range(40)))
        assert note is not None and f"{MAX_SEND_LINES} lines" in note and "25 more were not sent" in note
        assert channel.send("short") is None
    finally:
        channel.close()  # what was queued goes out before the bot quits
    assert server.wait_for(lambda line: line == "PRIVMSG #room :short")
    sent = [line.split(" :", 1)[1] for line in server.received if line.startswith("PRIVMSG")]
    assert sent == [f"line {n}" for n in range(MAX_SEND_LINES)] + ["[... 25 more lines not sent: too long for IRC]", "short"]


def test_a_cut_never_splits_a_character(server) -> None:
    with joined(server) as channel:
        text = "a" + "é" * 300 + "🙂" * 200  # 2- and 4-byte characters straddling every 400-byte cut
        channel.send(text)
        assert server.wait_for(lambda _: len(sent_text(server)) == len(text))
        sent = [line.split(" :", 1)[1] for line in server.received if line.startswith("PRIVMSG")]
        assert "".join(sent) == text
        assert all(len(piece.encode()) <= 400 for piece in sent)


def test_no_ctcp_or_other_controls_go_out(server) -> None:
    with joined(server) as channel:
        channel.send("\x01DCC SEND evil.exe 1 2 3\x01")
        channel.send("a\x00b\x07c\x1bd \x02bold\x02 \x0304red\x0f \x1ditalic\x1d \x1funder\x1f\tend")
        assert server.wait_for(lambda line: line.endswith("end"))
        sent = [line for line in server.received if line.startswith("PRIVMSG")]
        assert sent == ["PRIVMSG #room :DCC SEND evil.exe 1 2 3",
                        "PRIVMSG #room :abcd \x02bold\x02 \x0304red\x0f \x1ditalic\x1d \x1funder\x1f\tend"]


def test_an_endless_line_is_dropped_and_the_reader_keeps_up(server, caplog) -> None:
    with joined(server) as channel:
        assert server.conn is not None
        # 8 MB without a line end: rescanning the whole buffer on every 4 KB read took minutes
        server.conn.sendall(b":alice!a@h PRIVMSG #room :" + b"x" * 8_000_000)
        server.say("")  # its end
        server.say("PING :still-there")
        server.say(":alice!a@h PRIVMSG #room :after")
        assert server.wait_for(lambda line: line == "PONG :still-there", timeout=10)
        assert collect(channel, 1) == ["alice: after"]  # the long line itself is not a message
        assert "longer than 65536 bytes" in caplog.text


def test_line_buffer() -> None:
    lines = LineBuffer(10)
    assert lines.feed(b"ab") == []
    assert lines.feed(b"c\r\nde\nf") == [b"abc", b"de"]
    assert lines.feed(b"0123456789") == []  # "f" + 10 bytes: past the limit, dropped to its end
    assert lines.feed(b"more\r\nok\r\n") == [b"ok"]
    assert lines.feed(b"x" * 11 + b"\r\ny\r\n") == [b"y"]  # overlong even when its end comes along


def test_split_utf8() -> None:
    assert split_utf8("", 400) == [""]
    assert split_utf8("a" + "é" * 2, 2) == ["a", "é", "é"]
    assert split_utf8("€€", 4) == ["€", "€"]
    assert split_utf8("🙂x", 2) == ["🙂", "x"]


def test_parse_line() -> None:
    assert parse_line(":nick!u@h PRIVMSG #r :hi there") == ("nick!u@h", "PRIVMSG", ["#r"], "hi there")
    assert parse_line("PING :abc") == ("", "PING", [], "abc")


def test_a_one_word_message_sent_without_its_colon_is_heard() -> None:
    for line, text in ((":bob!u@h PRIVMSG #r hello", "hello"), (":bob!u@h PRIVMSG #r :hi there", "hi there"),
                       (":bob!u@h PRIVMSG #r :", "")):
        _, _, params, trailing = parse_line(line)
        assert said(params, trailing) == text


def test_a_kicked_bot_joins_again_later(server, monkeypatch) -> None:
    monkeypatch.setattr("mettaclaw.channels.irc.REJOIN_DELAY", 0.05)
    with joined(server) as channel:
        server.say(":op!o@h KICK #room agent :out")
        assert server.wait_for(lambda _: server.received.count("JOIN #room") == 2)
        assert channel.wait_joined(5)
        server.say(":op!o@h KICK #room agent :out again")  # the next wait is twice as long
        assert server.wait_for(lambda _: server.received.count("JOIN #room") == 3)
        server.say(":op!o@h KICK #room alice :not the bot")
        time.sleep(0.3)
        assert server.received.count("JOIN #room") == 3


def test_a_stand_in_nick_is_given_back_for_the_wanted_one() -> None:
    server = FakeIRCServer(taken=frozenset({"agent"}))
    with joined(server) as channel:
        assert channel.nick == "agent_"
        server.say("PING :one")  # still taken: asked for, refused, and the stand-in kept
        assert server.wait_for(lambda line: line == "PONG :one")
        assert server.wait_for(lambda _: server.received.count("NICK agent") == 2)
        assert channel.nick == "agent_"
        server.taken = frozenset()
        server.say(":agent!x@h QUIT :gone")  # its holder leaves: the bot takes it back at once
        assert server.wait_for(lambda _: server.received.count("NICK agent") == 3)
        deadline = time.monotonic() + 5
        while channel.nick != "agent" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert channel.nick == "agent"
        server.say(":alice!a@h PRIVMSG agent :hello")  # a private message to the new nick is seen as one
        server.say("PING :two")
        assert server.wait_for(lambda line: line == "PONG :two")
        assert server.received.count("NICK agent") == 3  # holding it, no more asking
        server.listener.close()


def test_ctcp_action_is_heard_other_ctcp_is_not(server) -> None:
    with joined(server, secret="s3cret") as channel:
        server.say(":alice!a@h PRIVMSG #room :auth s3cret")
        assert server.wait_for(lambda line: "alice is now my owner" in line)
        server.say(":alice!a@h PRIVMSG #room :\x01ACTION waves\x01")
        server.say(":alice!a@h PRIVMSG #room :\x01VERSION\x01")
        server.say(":alice!a@h PRIVMSG agent :\x01PING 123\x01")
        server.say(":alice!a@h PRIVMSG #room :\x01ACTION auth s3cret\x01")  # `/me auth ...`: never heard
        server.say(":alice!a@h PRIVMSG #room :hello")
        assert collect(channel, 2) == ["alice: *waves*", "alice: hello"]


def test_said_reads_ctcp() -> None:
    assert said(["#r"], "\x01ACTION dances\x01") == "*dances*"
    assert said(["#r"], "\x01action  dances \x01") == "*dances*"
    assert said(["#r"], "\x01ACTION\x01") == ""
    assert said(["#r"], "\x01DCC SEND x 1 2 3\x01") == ""
    assert said(["#r"], "\x01VERSION") == ""  # no closing \x01, as some clients send it
