"""Every message is its own episode: its own trace record, id, sender and index row, however many
messages a turn gathered; what the agent did is a record of its own that names them. Records written
one turn a record (before this rule) are indexed again at open, one row a message."""

from __future__ import annotations

import re

from conftest import CountingEmbedder

from mettaclaw.memory.episodes.index import EPISODE_FORMAT
from mettaclaw.memory.episodes.records import Episode, message_parts
from mettaclaw.memory.episodes.trace import ONE_MESSAGE_SUFFIX, EpisodicTrace
from mettaclaw.messages import Message
from mettaclaw.parser import Command


def test_a_turn_of_three_messages_writes_three_episodes_and_one_record_of_what_the_agent_did(open_test_memory) -> None:
    memory = open_test_memory()
    said = [Message("my dog is called Biscuit", "alice", "irc:#home"),
            Message("the boiler man comes on Friday at 10", "bob", "irc:#home"),
            Message("ok", "alice", "irc:#home")]
    record = memory.record_turn("2026-11-28 10:00:00", said, [Command("send", ("noted",))], outcomes=[(0, 1.0)])
    assert len(record.message_ids) == 3
    records = list(memory.trace)
    assert [e.message for e in records] == ["alice: my dog is called Biscuit", "bob: the boiler man comes on Friday at 10",
                                            "alice: ok", ""]
    assert [e.who for e in records] == [("alice",), ("bob",), ("alice",), ("alice", "bob")]
    assert [e.id for e in records[:3]] == record.message_ids
    assert records[3].in_reply_to == tuple(record.message_ids)  # the turn is a grouping of episodes
    assert records[3].commands == [Command("send", ("noted",))] and record.turn_id == records[3].id
    for episode_id, message in zip(record.message_ids, said, strict=True):
        row = memory.index.row(episode_id)
        assert row.document == message.shown()
        assert row.metadata["episode_format"] == EPISODE_FORMAT
    hits = memory.index.query("when does the boiler man come", limit=1, kind="episode")
    assert [h.text for h in hits] == ["bob: the boiler man comes on Friday at 10"]  # the message, not the turn


def test_one_message_a_turn_is_one_record_as_before(open_test_memory) -> None:
    memory = open_test_memory()
    record = memory.record_turn("2026-11-28 10:00:00", [Message("hello", "alice", "irc:#home")],
                                [Command("send", ("hi",))], outcomes=[(0, 1.0)])
    (episode,) = list(memory.trace)
    assert record.turn_id == episode.id and record.message_ids == [episode.id]
    assert episode.commands and episode.in_reply_to == ()
    assert sorted(record.episode_ids) == sorted([episode.id, "act-" + episode.id.removeprefix("ep-")])


def test_messages_without_an_action_write_no_empty_record(open_test_memory) -> None:
    memory = open_test_memory()
    record = memory.record_turn("2026-11-28 10:00:00", [Message("a", "x", "irc:#c"), Message("b", "y", "irc:#c")], [])
    assert len(list(memory.trace)) == 2 and record.turn_id == record.message_ids[-1]


def test_a_turn_is_written_in_one_synced_write_and_read_back_whole(tmp_path) -> None:
    trace = EpisodicTrace(tmp_path / "history.metta")
    written = trace.append_turn("2026-11-28 10:00:00", [("alice: one", ("alice",)), ("bob: two", ("bob",))],
                                [Command("shell", ("ls",))], "boom", "irc:#c", [(2, 5.0)])
    again = list(EpisodicTrace(tmp_path / "history.metta"))
    assert [(e.id, e.message, e.who, e.commands, e.errors, e.outcomes, e.in_reply_to) for e in again] == \
        [(e.id, e.message, e.who, e.commands, e.errors, e.outcomes, e.in_reply_to) for e in written]
    assert again[-1].errors == "boom" and again[-1].outcomes == [(2, 5.0)]


def legacy(message: str, who: tuple[str, ...]) -> Episode:
    return Episode("ep-0", "2026-01-01 10:00:00", message, who=who, channel="irc:#c")


def test_an_older_record_is_read_apart_only_where_each_line_group_starts_with_a_sender() -> None:
    assert message_parts(legacy("alice: hi\nbob: my new dog is Rex\nhe is a beagle\nalice: nice", ("alice", "bob"))) == \
        [("alice", "alice: hi"), ("bob", "bob: my new dog is Rex\nhe is a beagle"), ("alice", "alice: nice")]
    pasted = "here is the log:\nalice: this line was pasted"
    assert message_parts(legacy(pasted, ("alice",))) == [("alice", pasted)]  # no message began on the first line
    assert message_parts(legacy("one line", ())) == [("", "one line")]


def test_a_folder_indexed_one_row_a_turn_is_indexed_again_one_row_a_message(tmp_path, open_test_memory) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    trace = folder / "history.metta"
    # a turn recorded before one record a message: two people's lines in one record, and its old index row
    blob = EpisodicTrace(trace)
    (trace.parent / (trace.name + ONE_MESSAGE_SUFFIX)).unlink()  # as a folder from before the rule has none
    blob.append("2026-01-01 10:00:00", "alice: my new dog is called Rex\nbob: my neighbour's dog is Bella",
                [Command("send", ("nice dogs",))], who=("alice", "bob"), channel="irc:#c")
    later = len(trace.read_bytes())
    memory = open_test_memory()  # notes where one-message records begin (after the old record)
    assert memory.trace.one_message_from == later
    memory.index.forget_many(memory.index.ids_by(kind="episode"))
    memory.index.remember_many([{"id": "ep-0", "text": "alice: my new dog is called Rex\nbob: my neighbour's dog is Bella",
                                 "time": "2026-01-01 10:00:00", "source": "irc:#c", "kind": "episode"}])
    memory.close()
    memory = open_test_memory()
    rows = {i: memory.index.row(i) for i in memory.index.ids_by(kind="episode")}
    assert {i: r.document for i, r in rows.items()} == {"ep-0": "alice: my new dog is called Rex",
                                                        "ep-0.1": "bob: my neighbour's dog is Bella",
                                                        "act-0": "agent: nice dogs"}
    assert all(r.metadata["episode_format"] == EPISODE_FORMAT for r in rows.values())
    assert re.search(r"who:bob\b", rows["ep-0.1"].metadata["tags"])
    assert memory.trace.get("ep-0.1").id == "ep-0"  # a part names its record


def test_indexing_a_folder_again_embeds_only_what_changed(open_test_memory) -> None:
    """Rows of one message keep their text: their vectors are reused, not embedded again (a folder of
    months of turns is indexed again at the first start)."""
    counting = CountingEmbedder()
    memory = open_test_memory("chromaMode=embedded", embedder=counting)
    for n in range(30):
        memory.record_turn(f"2026-11-28 10:{n:02d}:00", [Message(f"message number {n} about the garden", "ann", "irc:#c")],
                           [Command("send", (f"reply {n}",))])
    ids = memory.index.ids_by(kind="episode")
    memory.index.remember_many([{"id": i, "text": memory.index.row(i).document, "time": "2026-11-28 10:00:00",
                                 "source": "irc:#c", "kind": "episode"} for i in ids], replace=True)  # the old format
    memory.close()
    counting.texts = 0
    memory = open_test_memory("chromaMode=embedded", embedder=counting)
    assert memory.index.ids_by(kind="episode") == ids
    assert all(memory.index.row(i).metadata["episode_format"] == EPISODE_FORMAT for i in ids)
    assert counting.texts < 10  # the 60 rows' own vectors were reused
