"""The turn of a message: its own record, or the record of what the agent did that names it."""

from __future__ import annotations


def test_the_turn_of_a_message_is_read_forward_from_it(tmp_path) -> None:
    """A message's turn: its own record when it holds what was done, else the record that names it
    (IN_REPLY_TO) among the next few; none when that turn did nothing."""
    from mettaclaw.memory.episodes.trace import EpisodicTrace
    from mettaclaw.parser import Command

    trace = EpisodicTrace(tmp_path / "history.metta")
    shell = [Command("shell", ("sh -c 'exit 3'",))]
    alone = trace.append_turn("2026-03-01 10:00:00", [("back up my photos", ())], shell, None, "terminal", [(3, 5.0)])
    idle = trace.append_turn("2026-03-01 10:01:00", [("hello", ()), ("anyone there", ())], [], None, "terminal")
    gathered = trace.append_turn("2026-03-01 10:02:00", [("hi", ()), ("back up my photos", ()), ("bye", ())],
                                 shell, None, "terminal", [(3, 5.0)])
    assert trace.turn_of(alone[0].id).id == alone[0].id
    assert [trace.turn_of(e.id).id for e in gathered[:3]] == [gathered[3].id] * 3
    assert trace.turn_of(gathered[3].id).id == gathered[3].id
    assert [trace.turn_of(e.id) for e in idle] == [None, None], "a turn that did nothing has no record of it"
    assert trace.turn_of(gathered[0].id, within=2) is None, "read no further than `within` records"
    assert trace.turn_of("ep-999999") is None
