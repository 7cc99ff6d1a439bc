"""Channels: a burst of messages between two turns is delivered whole; the console shares the terminal."""

from __future__ import annotations

import io
import os
import time

from mettaclaw.channels import QueueChannel, TerminalChannel


def test_queue_channel_delivers_every_queued_message_once_with_its_sender() -> None:
    channel = QueueChannel(name="chat")
    for i in range(100):
        channel.put(f"m{i}", who="Ada" if i % 2 else None)
    channel.put("   ")  # blank: nothing to hand over
    got = channel.receive()
    assert [m.text for m in got] == [f"m{i}" for i in range(100)]
    assert got[1].who == "Ada" and got[0].who is None and {m.channel for m in got} == {"chat"}
    assert got[1].shown() == "Ada: m1" and got[0].shown() == "m0"
    assert channel.receive() == []


def test_terminal_burst_typed_between_turns_is_not_lost() -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd) as stdin, os.fdopen(write_fd, "w") as typist:
        out = io.StringIO()
        channel = TerminalChannel(stdin, out)
        for i in range(50):
            typist.write(f"line {i}\n")
        typist.flush()
        received: list[str] = []
        deadline = time.monotonic() + 10
        while len(received) < 50 and time.monotonic() < deadline:
            received += [m.text for m in channel.receive()]
            time.sleep(0.01)
        assert received == [f"line {i}" for i in range(50)]
        channel.send("hello")
        assert out.getvalue() == "agent> hello\n"


def test_terminal_end_of_input_closes_the_channel() -> None:
    channel = TerminalChannel(io.StringIO("only line\n"), io.StringIO())
    deadline = time.monotonic() + 5
    got = []
    while not channel.closed and time.monotonic() < deadline:
        got += [m.text for m in channel.receive()]
        time.sleep(0.01)
    assert got == ["only line"] and channel.closed


def test_console_model_reads_the_terminal_lines() -> None:
    channel = TerminalChannel(io.StringIO("send hi\n\n"), io.StringIO())
    assert channel.read_model_line() == "send hi"
    assert channel.read_model_line() == ""
    assert channel.read_model_line() is None and channel.closed


def test_what_the_agent_sends_cannot_drive_the_users_terminal() -> None:
    out = io.StringIO()
    channel = TerminalChannel(io.StringIO(""), out)
    channel.send("hi\x1b]0;pwned\x07 there\x1b[2J\tand\nbye\x00")
    assert out.getvalue() == "agent> hi\\x1b]0;pwned\\x07 there\\x1b[2J\tand\nbye\\x00\n"
    assert channel.sent == ["hi\x1b]0;pwned\x07 there\x1b[2J\tand\nbye\x00"]  # the record keeps what was sent


def test_a_terminal_whose_output_is_closed_is_gone_and_closed() -> None:
    import pytest

    from mettaclaw.channels import ChannelGone

    class Broken(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    channel = TerminalChannel(io.StringIO(""), Broken())
    for say in (channel.send, channel.notice):
        with pytest.raises(ChannelGone, match="output is closed"):
            say("anyone?")
    assert channel.closed


def test_a_crlf_line_end_is_a_line_end() -> None:
    """A file written on Windows, piped in: each line kept its CR, stored with memories and sent back as \\x0d."""
    channel = TerminalChannel(io.TextIOWrapper(io.BytesIO(b"remember the boat is blue\r\nsend hi\r\n\r\n")), io.StringIO())
    assert [channel.read_model_line() for _ in range(4)] == ["remember the boat is blue", "send hi", "", None]


def test_a_channel_keeps_only_its_newest_sent_lines() -> None:
    """A long-running agent kept every line it ever sent in memory."""
    from mettaclaw.channels import KEPT

    channel = QueueChannel()
    for i in range(10 * KEPT):
        channel.send(f"line {i}")
        channel.notice(f"notice {i}")
    assert KEPT // 2 <= len(channel.sent) <= KEPT and channel.sent[-1] == f"line {10 * KEPT - 1}"
    assert len(channel.notices) <= KEPT


def test_bidirectional_controls_are_shown_not_obeyed_on_the_terminal() -> None:
    """`send \\u202eolleh` reached the terminal as it was, which showed "hello": a bidi override or
    isolate reorders the rest of the line, so what the user read was not what the agent sent."""
    out = io.StringIO()
    channel = TerminalChannel(io.StringIO(""), out)
    sent = "\u202eolleh\u202c, \u2066isolated\u2069 \u202a\u202b\u202d \u2067\u2068 مرحبا \u200f."
    channel.send(sent)
    channel.notice("model error: \u202efailed")
    assert out.getvalue() == ("agent> \\u202eolleh\\u202c, \\u2066isolated\\u2069 \\u202a\\u202b\\u202d "
                              "\\u2067\\u2068 مرحبا \u200f.\nerror: model error: \\u202efailed\n")
    assert channel.sent == [sent]  # what is kept (the trace, memory) is what was sent
