"""Write-behind of the long-term index (vectorbuffer.py): rows are found before they reach the store,
a crash loses none of the acknowledged ones, a failing store loses nothing either."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from mettaclaw.config import load_config
from mettaclaw.memory.index.longterm import LongTermMemory, open_longterm
from mettaclaw.memory.stores.buffered import BufferedVectors, VectorJournal
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore


def unit(seed: int) -> np.ndarray:
    vec = np.random.default_rng(seed).standard_normal(8).astype(np.float32)
    return vec / np.linalg.norm(vec)


def test_the_journal_replays_what_waits_and_empties_when_nothing_does(tmp_path) -> None:
    path = tmp_path / "j.jsonl"
    journal = VectorJournal(path)
    journal.queue([("a", unit(1), "alpha", {"kind": "memory", "n": 1}), ("b", unit(2), "beta", {"kind": "memory"})])
    journal.queue([("a", unit(3), "alpha again", {"kind": "memory"})])
    journal.settled(["b"])
    rows = VectorJournal(path).replay()
    assert [(r[0], r[2]) for r in rows] == [("a", "alpha again")]
    assert np.array_equal(rows[0][1], unit(3)), "vectors come back bit for bit"
    journal.settled(["a"])
    assert path.stat().st_size == 0 and VectorJournal(path).replay() == []


def test_a_torn_last_line_is_skipped_silently_and_a_bad_middle_line_with_a_warning(tmp_path, caplog) -> None:
    path = tmp_path / "j.jsonl"
    VectorJournal(path).queue([("a", unit(1), "alpha", {})])
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    VectorJournal(path).queue([("b", unit(2), "beta", {})])
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"put": [["c", "AAAA')  # a crash mid-append: never acknowledged
    with caplog.at_level("WARNING"):
        rows = VectorJournal(path).replay()
    assert [r[0] for r in rows] == ["a", "b"]
    assert len(caplog.records) == 1 and "line 2" in caplog.records[0].getMessage()


def test_rows_are_found_before_the_store_has_them_and_replayed_after_a_crash(tmp_path) -> None:
    store, journal = InMemoryVectorStore(), tmp_path / "index-journal.jsonl"
    first = LongTermMemory(HashEmbedder(), store, journal=journal)
    kept = first.remember("Quentin plays the bassoon on Sundays")
    gone = first.remember("The garage code is 4471")
    assert store.count() == 0, "below a batch nothing is sent yet"
    assert [m.id for m in first.query("bassoon", mode="vector", limit=1)] == [kept.id]
    assert first.forget(gone.id)
    assert "4471" not in journal.read_text() and "bassoon" in journal.read_text(), "a forgotten text leaves the file"
    # a crash: `first` is never closed; the next open sends the journal's rows to the store
    again = LongTermMemory(HashEmbedder(), store, journal=journal)
    assert store.get([kept.id]) and not store.get([gone.id]), "a forgotten row does not come back"
    assert journal.stat().st_size == 0
    assert [m.id for m in again.query("bassoon")] == [kept.id]
    again.close()


def test_full_batches_are_flushed_in_the_background_and_close_flushes_the_rest(tmp_path) -> None:
    store = InMemoryVectorStore()
    ltm = LongTermMemory(HashEmbedder(), store, journal=tmp_path / "j.jsonl")
    ids = [ltm.remember(f"note {i} about the orchard").id for i in range(150)]
    deadline = time.monotonic() + 10
    while store.count() < 128 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.count() >= 128, "two batches reached the store without the writer waiting for them"
    assert {m.id for m in ltm.query("orchard", limit=150, mode="vector")} == set(ids)
    ltm.close()
    assert store.count() == 150 and (tmp_path / "j.jsonl").stat().st_size == 0


class GatedStore(InMemoryVectorStore):
    """A store whose `add` waits for a signal: a flush caught halfway."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()
        self.fail = False

    def add(self, ids, vectors, documents, metadatas) -> None:
        self.entered.set()
        self.release.wait(10)
        if self.fail:
            raise OSError("disk full")
        super().add(ids, vectors, documents, metadatas)


def test_a_row_written_again_during_a_flush_keeps_its_new_content(tmp_path) -> None:
    store = GatedStore()
    buffered = BufferedVectors(store, VectorJournal(tmp_path / "j.jsonl"))
    buffered.add(["x"], np.stack([unit(1)]), ["old text"], [{}])
    flusher = threading.Thread(target=buffered.flush)
    flusher.start()
    assert store.entered.wait(10)
    buffered.add(["x"], np.stack([unit(2)]), ["new text"], [{}])
    assert buffered.get(["x"])[0].document == "new text", "reads go on during the upsert"
    store.release.set()
    flusher.join()
    assert buffered.get(["x"])[0].document == "new text"
    assert [r[2] for r in VectorJournal(tmp_path / "j.jsonl").replay()] == ["new text"], "still waiting"
    buffered.close()
    assert store.get(["x"])[0].document == "new text"


def test_a_failing_store_loses_nothing_and_the_rows_go_in_later(tmp_path, caplog) -> None:
    store = GatedStore()
    store.release.set()
    store.fail = True
    buffered = BufferedVectors(store, VectorJournal(tmp_path / "j.jsonl"), flush_every=2)
    buffered.add(["a"], np.stack([unit(1)]), ["alpha"], [{}])
    buffered.add(["b"], np.stack([unit(2)]), ["beta"], [{}])
    with caplog.at_level("ERROR"):
        buffered.maybe_flush()  # logged, not raised: the write it follows is stored
    assert "disk full" in caplog.text and "stay queued" in caplog.text
    assert buffered.query(unit(2), 1)[0][0].id == "b"
    store.fail = False
    buffered.close()
    assert store.count() == 2 and (tmp_path / "j.jsonl").stat().st_size == 0


WRITER = """
import sys
from mettaclaw.config import load_config
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.index.longterm import open_longterm
ltm = open_longterm(load_config([f"memoryDir={sys.argv[1]}", "embeddingprovider=hash"], env={}), HashEmbedder())
i = 0
while True:
    row = ltm.remember(f"note {i} of the writer, about topic {i % 7}")
    print(row.id, flush=True)
    i += 1
"""


@pytest.mark.slow
def test_kill_during_remembers_loses_no_acknowledged_memory(tmp_path) -> None:
    """kill -9 at a different point of each trial (mid-batch, mid-flush): every id the writer printed,
    i.e. every remember that returned, is in the real Chroma store afterwards, and the store opens."""
    config = load_config([f"memoryDir={tmp_path}", "embeddingprovider=hash"], env={})
    acknowledged: list[str] = []
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    for trial in range(4):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                                env=env)
        wanted, deadline = len(acknowledged) + 40 + trial * 37, time.monotonic() + 120
        while len(acknowledged) < wanted and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acknowledged.append(line.strip())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert len(acknowledged) == wanted, "the writer stopped early"
        ltm = open_longterm(config, HashEmbedder())
        try:
            missing = [i for i in acknowledged if ltm.get(i) is None]
            assert not missing, f"trial {trial}: {len(missing)} acknowledged memories lost"
            # all of them reached Chroma at open (and maybe a row written just before the kill, never printed)
            assert ltm.vector_store.index.count() >= len(set(acknowledged))
            assert not ltm.vector_store._pending
        finally:
            ltm.close()
    journal = tmp_path / "index-journal.jsonl"
    assert journal.stat().st_size == 0, "closing sent everything to the store"


def test_a_bulk_write_goes_straight_to_the_store_and_supersedes_what_waits(tmp_path) -> None:
    store = InMemoryVectorStore()
    buffered = BufferedVectors(store, VectorJournal(tmp_path / "j.jsonl"), flush_every=3)
    buffered.add(["a"], np.stack([unit(1)]), ["old a"], [{}])
    buffered.add(["a", "b", "c"], np.stack([unit(2), unit(3), unit(4)]), ["new a", "b", "c"], [{}, {}, {}])
    assert store.count() == 3 and buffered.get(["a"])[0].document == "new a"
    assert VectorJournal(tmp_path / "j.jsonl").replay() == [], "nothing waits: a crash now replays no old a"


def test_a_line_torn_by_a_full_disk_does_not_swallow_the_next_acknowledged_row(tmp_path) -> None:
    path = tmp_path / "j.jsonl"
    journal = VectorJournal(path)
    journal.queue([("a", unit(1), "alpha", {})])
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"put": [["b", "AAAA')  # the append of b failed halfway: b was never acknowledged
    journal.queue([("c", unit(3), "gamma", {})])
    assert [r[0] for r in VectorJournal(path).replay()] == ["a", "c"]


def test_rows_the_store_refuses_at_open_stay_waiting_and_searchable(tmp_path, caplog) -> None:
    path = tmp_path / "j.jsonl"
    VectorJournal(path).queue([("a", unit(1), "alpha", {})])
    store = GatedStore()
    store.release.set()
    store.fail = True
    with caplog.at_level("ERROR"):
        buffered = BufferedVectors(store, VectorJournal(path))
    assert "could not go to the vector index yet" in caplog.text
    assert buffered.query(unit(1), 1)[0][0].id == "a"
    store.fail = False
    buffered.close()
    assert store.get(["a"]) and path.stat().st_size == 0


def test_bytes_that_are_not_utf8_in_a_folders_line_files_cost_their_line_not_the_folder(tmp_path) -> None:
    """A disk error's bytes in the journal, the delivered-turns file or a pin raised UnicodeDecodeError:
    the folder did not open (the journal, delivered.jsonl) or every turn failed (the pin). Now the
    damaged line is skipped with a warning, and the acknowledged row after it is replayed."""
    from conftest import test_config

    from mettaclaw.memory import open_memory

    folder = tmp_path / "memory"
    folder.mkdir()
    config = test_config(folder, "chromaMode=embedded")
    good = VectorJournal(tmp_path / "good.jsonl")
    good.queue([("ack-1", HashEmbedder().embed(["the ferry leaves at noon"])[0], "the ferry leaves at noon",
                 {"kind": "memory", "time": "2026-11-24 10:00:00", "source": "agent", "tags": "", "hash": "h1"})])
    (folder / "index-journal.jsonl").write_bytes(b"\xff\xfe{\n" + (tmp_path / "good.jsonl").read_bytes())
    (folder / "delivered.jsonl").write_bytes(b"\xff\xfe{\n")
    (folder / "pins.txt").write_bytes(b"pay the deposit \xff")
    memory = open_memory(config, dream=False)
    try:
        assert memory.index.get("ack-1").text == "the ferry leaves at noon"
        assert memory.working.text.startswith("pay the deposit")
    finally:
        memory.close()
