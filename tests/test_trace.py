"""The episodic trace: record format, seek-based reads, torn records, and kill -9 during writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mettaclaw.memory.episodes.records import parse_record
from mettaclaw.memory.episodes.trace import EpisodicTrace
from mettaclaw.parser import Command


def stamp(i: int) -> str:
    return f"2026-03-{1 + i // 86400:02d} {(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}"


def test_record_format_matches_the_spec(tmp_path) -> None:
    trace = EpisodicTrace(tmp_path / "history.metta")
    trace.append("2026-03-01 10:00:00", 'say "hi"', [Command("send", ("hello\nthere",)), Command("query", ())], "boom")
    line = (tmp_path / "history.metta").read_text()
    assert line == '("2026-03-01 10:00:00" "HUMAN_MESSAGE: " "say \\"hi\\"" (send "hello\\nthere") (query) "ERROR_FEEDBACK: boom")\n'
    episode = parse_record(line.rstrip("\n"), 0)
    assert episode and episode.message == 'say "hi"' and episode.commands[0].args == ("hello\nthere",)
    assert episode.errors == "boom"


def test_tail_reads_whole_records_within_the_budget(tmp_path) -> None:
    trace = EpisodicTrace(tmp_path / "h.metta")
    for i in range(500):
        trace.append(stamp(i), f"message {i}", [])
    tail = trace.tail(300)
    lines = tail.split("\n")
    assert len(tail) <= 300 and lines[-1].find("message 499") > 0
    assert all(parse_record(line, 0) for line in lines)


def test_a_record_too_long_for_the_tail_is_shown_cut_and_older_records_still_show(tmp_path) -> None:
    trace = EpisodicTrace(tmp_path / "h.metta")
    for i in range(5):
        trace.append(stamp(i), f"before {i}", [])
    trace.append(stamp(10), "pasted " + "0123456789" * 20_000, [])  # 200k characters, past the reading window
    trace.append(stamp(11), "after it", [])
    lines = trace.tail(4000).replace("\n[... record", " [... record").split("\n")
    assert [line for line in lines if "before" in line][0].endswith('"before 0")')  # nothing older is lost
    cut = [line for line in lines if "pasted" in line]
    assert len(cut) == 1 and len(cut[0]) < 1100 and cut[0].endswith("record truncated: 199051 more characters not shown ...]")
    assert lines[-1].endswith('"after it")') and sum(len(line) + 1 for line in lines) <= 4001


def test_around_finds_records_by_time_and_get_by_id(tmp_path) -> None:
    trace = EpisodicTrace(tmp_path / "h.metta")
    ids = [trace.append(stamp(i * 30), f"m{i}", []) for i in range(2000)]
    found = trace.around(stamp(1000 * 30), 3)
    assert [e.message for e in found] == ["m997", "m998", "m999", "m1000", "m1001", "m1002", "m1003"]
    assert [e.message for e in trace.around("2026-03-01", 1)] == ["m0", "m1"]
    assert trace.get(ids[1234]).message == "m1234"
    assert trace.get("ep-5") is None and trace.get("nonsense") is None


def test_around_finds_records_by_time_where_the_clock_went_back(tmp_path) -> None:
    """One bisection over the file assumed its times never decrease: after the clock went back a day,
    a time of the first day found the second day's records and the other way round."""
    trace = EpisodicTrace(tmp_path / "h.metta")
    for i in range(40):
        trace.append(stamp(86400 + i * 60), f"late{i}", [])
    for i in range(40):  # the clock set back a day
        trace.append(stamp(i * 60), f"early{i}", [])
    trace.append(stamp(86400 + 50 * 60), "late50", [])  # and forward again
    assert [e.message for e in trace.around(stamp(20 * 60), 1)] == ["early19", "early20", "early21"]
    assert [e.message for e in trace.around(stamp(86400 + 20 * 60), 1)] == ["late19", "late20", "late21"]
    assert [e.message for e in trace.around(stamp(86400 + 45 * 60), 1)] == ["late39", "late50"]
    assert [e.message for e in trace.around("2026-03-01", 1)] == ["early0", "early1"]
    assert [e.message for e in trace.around("2026-03-02", 1)] == ["early39", "late0", "late1"]
    again = EpisodicTrace(tmp_path / "h.metta")  # the runs are kept beside the trace
    assert [e.message for e in again.around(stamp(30 * 60), 0)] == ["early30"]
    runs = (tmp_path / "h.metta.runs").read_text()
    (tmp_path / "h.metta.runs").unlink()
    again.note_runs()  # what an import does with the trace it wrote
    assert (tmp_path / "h.metta.runs").read_text() == runs


def test_a_torn_last_record_is_skipped_and_the_next_write_is_clean(tmp_path) -> None:
    path = tmp_path / "h.metta"
    trace = EpisodicTrace(path)
    trace.append(stamp(1), "one", [])
    with open(path, "ab") as fh:
        fh.write(b'("2026-03-01 00:00:02" "HUMAN_MESSAGE: " "tor')
    assert [e.message for e in trace] == ["one"]
    assert "tor" not in trace.tail(1000)
    trace.append(stamp(3), "three", [])
    assert [e.message for e in EpisodicTrace(path)] == ["one", "three"]


WRITER = """
import sys
from mettaclaw.memory.episodes.trace import EpisodicTrace
from mettaclaw.parser import Command
trace = EpisodicTrace(sys.argv[1])
i = 0
while True:
    trace.append("2026-03-01 00:00:00", "m" + str(i) + " " + "x" * 3000, [Command("send", ("y" * 2000,))])
    print(i, flush=True)
    i += 1
"""


def test_kill_during_trace_writes_leaves_a_readable_trace(tmp_path) -> None:
    path = tmp_path / "h.metta"
    for trial in range(5):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
        acknowledged = -1
        deadline = time.monotonic() + 60
        while acknowledged < 20 + trial * 7 and time.monotonic() < deadline:
            acknowledged = int(proc.stdout.readline())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        messages = [e.message.split()[0] for e in EpisodicTrace(path)]
        # every acknowledged record of this trial is there, in order, and the file still reads
        assert f"m{acknowledged}" in messages
        assert messages.count("m0") == trial + 1
    assert len(EpisodicTrace(Path(path)).tail(10_000)) > 0


def test_a_time_no_reader_can_parse_back_is_refused_and_nothing_is_written(tmp_path) -> None:
    """The index catches up from the trace at open and the dream reads each record's time: one record
    at an impossible time stopped the memory folder from opening."""
    import pytest

    trace = EpisodicTrace(tmp_path / "h.metta")
    for bad in ("2026-02-30 10:00:00", "2026-13-45 99:99:99", "0001-01-01 00:00:00", "knowledge_prior", "soon"):
        with pytest.raises(ValueError, match="bad time"):
            trace.append(bad, "hello", [])
    assert (tmp_path / "h.metta").read_bytes() == b""
    trace.append("2024-02-29 23:59:59", "a leap day", [])
    assert [e.message for e in trace] == ["a leap day"]


def test_a_folder_whose_trace_holds_an_impossible_time_still_opens(tmp_path, open_test_memory) -> None:
    """Such a record was written before the trace checked times (or by hand): the index, the dream and
    the statistics pass it over with a warning, and everything else is found."""
    folder = tmp_path / "memory"
    folder.mkdir()
    good = EpisodicTrace(folder / "history.metta")
    good.append("2026-02-27 10:00:00", "the boat is moored at pier four", [])
    with open(folder / "history.metta", "a", encoding="utf-8") as fh:
        fh.write('("2026-02-30 10:00:00" "HUMAN_MESSAGE: " "a day that never was" (send "hi"))\n')
    good.append("2026-03-01 10:00:00", "the kayak is in the shed", [])
    memory = open_test_memory()
    assert [h.text.split(": ", 1)[-1] for h in memory.query("kayak shed", 1)] == ["the kayak is in the shed"]
    assert all("never was" not in h.text for h in memory.query("a day that never was", 5, layer="episodic"))
    memory.dreamer.dream("test")  # reads the same records: no failure


def test_a_trace_restored_from_an_older_copy_does_not_merge_new_turns_into_old_rows(tmp_path) -> None:
    """history.metta cut at a record boundary (restored from a backup older than the index): the next
    turn is written at the offset of a turn the index still held, and was merged into that row under
    the same id, with the old speaker's scope (bob could read alice's turn); the dream's and the
    statistics' marks, beyond the end, passed over every new turn. Now the rows beyond the end go,
    said in the log, and the marks come back to the end."""
    from conftest import test_config

    from mettaclaw.memory import open_memory
    from mettaclaw.messages import Message

    config = test_config(tmp_path / "memory", "chromaMode=embedded")
    memory = open_memory(config, dream=False)
    for n in range(6):
        memory.record_turn(f"2026-11-24 10:0{n}:00", [Message(f"bob's boat {n} is blue", "bob", "irc:#c")],
                           [Command("shell", ("ls",))], outcomes=[(0, 5.0)])
    memory.dreamer.dream()
    memory.close()
    trace = tmp_path / "memory" / "history.metta"
    kept = b"".join(trace.read_bytes().splitlines(keepends=True)[:3])
    trace.write_bytes(kept)
    memory = open_memory(config, dream=False)
    try:
        turn = memory.record_turn("2026-11-24 11:00:00", [Message("alice's new thing", "alice", "irc:#c")], [])
        assert turn.turn_id == f"ep-{len(kept)}"
        assert memory.index.get(turn.turn_id).tags == ("who:alice", "scope:user:alice")
        assert [h.text for h in memory.query("boat", 10, visible=frozenset({"user:bob"}))
                if "alice" in h.text] == []
        assert sorted(int(r.id.split("-")[1]) for r in memory.index if r.id.startswith("ep-"))[-1] == len(kept)
        assert [e.id for e in memory.dreamer.source.after(memory.dreamer.state.dream_mark, 10)] == [turn.turn_id]
        assert memory.statistics.mark == len(kept)
    finally:
        memory.close()


def test_turns_dropped_with_a_cut_trace_are_said_at_start_up(tmp_path, capsys) -> None:
    """The open that finds the trace cut short drops the index rows of the turns beyond its end, the last
    copy of what those turns said, and said so only in agent.log, which no one reads at start: the
    agent started as if nothing had happened. Now start-up says it in a `warning:` line."""
    from conftest import test_config

    from mettaclaw import entry
    from mettaclaw.messages import Message

    config = test_config(tmp_path / "memory", "chromaMode=embedded")
    memory = entry.open_memory(config, dream=False)
    for n in range(4):
        memory.record_turn(f"2026-11-24 10:0{n}:00", [Message(f"the boat {n} is blue", "bob", "irc:#c")], [])
    memory.close()
    trace = tmp_path / "memory" / "history.metta"
    entry.open_memory(config, dream=False).close()
    assert "warning" not in capsys.readouterr().err
    trace.write_bytes(b"".join(trace.read_bytes().splitlines(keepends=True)[:1]))
    entry.open_memory(config, dream=False).close()
    said = capsys.readouterr().err.splitlines()
    assert said == [f"warning: the trace {trace} ends at byte {trace.stat().st_size}, before 3 turns the index held (it "
                    "was cut, or restored from an older copy): those turns are gone from memory (their 3 index rows "
                    "were dropped with them)"]


def test_forgetting_a_memory_keeps_the_records_around_one_holding_bytes_that_are_not_utf8(tmp_path, open_test_memory) -> None:
    """A trace record with bytes that are not UTF-8 (a disk error, an edit by hand) was written back by
    the forget of a memory it had remembered with each such byte as a 3-byte replacement character:
    longer than it was, it ran over the next record, and both turns were lost from the trace. Now the
    record is rewritten byte for byte, and a rewrite that cannot fit is not made."""
    folder = tmp_path / "memory"
    folder.mkdir()
    damaged = b'("2026-11-24 10:00:00" "HUMAN_MESSAGE: " "caf\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8" (remember "kayak key"))\n'
    hand = b'("2026-11-24 10:01:00" "HUMAN_MESSAGE: " "hi" (send ok) (remember hu))\n'  # written longer by the writer
    after = b'("2026-11-24 10:02:00" "HUMAN_MESSAGE: " "the next turn" (send "ok"))\n'
    (folder / "history.metta").write_bytes(damaged + hand + after)
    memory = open_test_memory()
    for text, when in (("kayak key", "2026-11-24 10:00:00"), ("hu", "2026-11-24 10:01:00")):
        memory.forget(memory.remember(text, time=when).id)
    data = (folder / "history.metta").read_bytes()
    redacted = damaged.replace(b'(remember "kayak key"))', b'(remember ""))' + b" " * 9)  # the marker has no room
    assert data == redacted + hand + after, data
    assert [e.message for e in memory.trace][1:] == ["hi", "the next turn"]
