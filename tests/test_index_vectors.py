"""The index's own copies of vectors by row id (its rows' and their sentences'): they survive a
restart, never serve another text, and a torn or foreign file costs a re-computation, never a wrong
vector or a failed open."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mettaclaw.memory.index.sentence_vectors import SentenceVectors
from mettaclaw.memory.stores import keyed_vectors
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.keyed_vectors import FileKeyedVectors, text_digest

DIM = 8


def vecs(seed: int, rows: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(rows, DIM)).astype(np.float16)


def reopen(folder: Path, embedder: str = "hash", dtype: str = "float16") -> FileKeyedVectors:
    return FileKeyedVectors(folder, embedder, DIM, dtype)


def test_vectors_come_back_after_a_reopen_for_the_same_text_only(tmp_path: Path) -> None:
    store = reopen(tmp_path)
    store.put("a", text_digest("Ann: one. two. three."), vecs(1))
    store.put("b", text_digest("Bob: four. five."), vecs(2, 2))
    store.close()
    store = reopen(tmp_path)
    assert np.array_equal(store.get("a", text_digest("Ann: one. two. three.")), vecs(1))
    assert np.array_equal(store.get("b", text_digest("Bob: four. five.")), vecs(2, 2))
    assert store.get("a", text_digest("Ann: one. two. changed.")) is None  # the row's text was rewritten
    assert store.get("c", text_digest("anything")) is None
    store.close()


def test_a_forgotten_row_is_gone_and_its_vectors_are_overwritten(tmp_path: Path) -> None:
    store = reopen(tmp_path)
    store.put("a", "d1", vecs(1))
    store.put("b", "d2", vecs(2))
    store.put("b", "d3", vecs(3))  # replaced: the old vectors are overwritten too
    store.forget("a")
    store.close()
    data = b"".join(p.read_bytes() for p in tmp_path.glob("vectors-*.bin"))
    assert vecs(1).tobytes() not in data and vecs(2).tobytes() not in data
    assert vecs(3).tobytes() in data
    store = reopen(tmp_path)
    assert store.get("a", "d1") is None and store.get("b", "d2") is None
    assert np.array_equal(store.get("b", "d3"), vecs(3))
    store.close()


def test_a_torn_tail_loses_only_the_torn_entry_and_later_writes_read_back(tmp_path: Path) -> None:
    store = reopen(tmp_path)
    store.put("a", "d1", vecs(1))
    store.put("b", "d2", vecs(2))
    store.close()
    vectors = next(tmp_path.glob("vectors-*.bin"))
    with open(vectors, "r+b") as fh:  # a crash mid-append: b's vectors half written, its line torn
        fh.truncate(vectors.stat().st_size - DIM * 2 * 2 - 3)
    with open(tmp_path / "rows.jsonl", "ab") as fh:
        fh.write(b'["c", 99, 3, "d')
    store = reopen(tmp_path)
    assert np.array_equal(store.get("a", "d1"), vecs(1))
    assert store.get("b", "d2") is None  # its vectors are not all there: embedded again when needed
    store.put("e", "d5", vecs(5))
    store.close()
    store = reopen(tmp_path)
    assert np.array_equal(store.get("e", "d5"), vecs(5)) and np.array_equal(store.get("a", "d1"), vecs(1))
    store.close()


@pytest.mark.parametrize("damage, said", [
    ("other embedder", "were made by hash (8 dimensions, float16), not by this memory's other (8 dimensions, float16)"),
    ("other type", "were made by hash (8 dimensions, float16), not by this memory's hash (8 dimensions, float32)"),
    ("other format", "are in format 1, not this version's 2"),
    # a damaged header said "made for another embedder or format", and the user looked for a setting
    ("garbage header", "are listed in rows.jsonl, whose header is damaged (not JSON)"),
    ("empty", "are listed in rows.jsonl, whose header is damaged (not JSON)"),
    ("a list", "are listed in rows.jsonl, whose header is damaged (not a JSON object)"),
    ("no dim", "are listed in rows.jsonl, whose header is damaged (no valid dim)"),
    ("path in header", "are listed in rows.jsonl, whose header is damaged (it names '../../etc/passwd' as the "
                       "vectors file)")])
def test_a_foreign_or_damaged_folder_starts_empty(tmp_path: Path, damage: str, said: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    store = reopen(tmp_path)
    store.put("a", "d1", vecs(1))
    store.close()
    rows = tmp_path / "rows.jsonl"
    if damage == "garbage header":
        rows.write_bytes(b"\x00\xffnot json\n")
    elif damage == "empty":
        rows.write_bytes(b"")
    elif damage == "a list":
        rows.write_bytes(b"[2]\n" + rows.read_bytes().split(b"\n", 1)[1])
    elif damage == "no dim":
        rows.write_bytes(rows.read_bytes().replace(b'"dim":8', b'"dim":"8"', 1))
    elif damage == "other format":
        rows.write_bytes(rows.read_bytes().replace(b'"format":2', b'"format":1', 1))
    elif damage == "path in header":
        rows.write_bytes(rows.read_bytes().replace(b"vectors-0.bin", b"../../etc/passwd", 1))
    embedder, dtype = {"other embedder": ("other", "float16"), "other type": ("hash", "float32")}.get(
        damage, ("hash", "float16"))
    with caplog.at_level("WARNING", logger=keyed_vectors.__name__):
        store = reopen(tmp_path, embedder, dtype)
    assert caplog.messages == [f"the vectors in {tmp_path} {said}; they will be computed again as they are needed"]
    assert store.get("a", "d1") is None
    assert sum(p.stat().st_size for p in tmp_path.glob("vectors-*.bin")) == 0  # nothing of the old kept
    store.put("a", "d1", vecs(1))
    store.close()
    assert np.array_equal(reopen(tmp_path, embedder, dtype).get("a", "d1"), vecs(1))


def test_a_mostly_dead_file_is_compacted_at_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyed_vectors, "COMPACT_ABOVE_BYTES", 0)
    store = reopen(tmp_path)
    for i in range(40):
        store.put(f"r{i}", f"d{i}", vecs(i))
    for i in range(30):
        store.forget(f"r{i}")
    store.close()
    before = next(tmp_path.glob("vectors-*.bin"))
    store = reopen(tmp_path)
    after = list(tmp_path.glob("vectors-*.bin"))
    assert len(after) == 1 and after[0].name != before.name
    assert after[0].stat().st_size == 10 * 3 * DIM * 2
    assert all(np.array_equal(store.get(f"r{i}", f"d{i}"), vecs(i)) for i in range(30, 40))
    store.put("new", "dn", vecs(99))
    store.close()
    store = reopen(tmp_path)
    assert np.array_equal(store.get("new", "dn"), vecs(99)) and store.get("r3", "d3") is None
    store.close()


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(DIM)
        self.seen: list[str] = []

    @property
    def texts(self) -> int:
        return len(self.seen)

    def embed(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        return super().embed(texts)


def test_a_row_missing_from_the_store_is_embedded_once_then_kept(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    keeper = SentenceVectors(embedder.embed, reopen(tmp_path))
    row = ("Ann: We moved house. The new garden is big.", {})
    first = keeper.of({"a": row, "single": ("one statement", {})})
    assert set(first) == {"a"} and embedder.texts == 2
    keeper.close()
    keeper = SentenceVectors(embedder.embed, reopen(tmp_path))
    again = keeper.of({"a": row})
    assert embedder.texts == 2 and np.array_equal(again["a"], first["a"])
    keeper.close()


def test_sentence_vectors_kept_under_an_earlier_split_are_made_again(tmp_path: Path) -> None:
    """Vectors stored when a summary's "Jo: ..." was split as "Sam: Jo: ..." (one row per sentence, as
    that split counted them) are not read as this split's: the row is embedded again, as it now splits."""
    embedder = CountingEmbedder()
    text = "Sam: I paint a lot. Jo: Lovely colours, really."
    old = reopen(tmp_path)
    old.put("a", text_digest(text), vecs(3, 2))  # the digest kept before the split was part of it
    old.close()
    keeper = SentenceVectors(embedder.embed, reopen(tmp_path))
    found = keeper.of({"a": (text, {})}, frozenset({"Sam", "Jo"}))
    assert embedder.seen == ["Sam: I paint a lot.", "Jo: Lovely colours, really."]
    assert not np.array_equal(found["a"], vecs(3, 2))
    keeper.close()


def test_sentence_vectors_kept_before_the_one_sentence_rule_are_made_again(tmp_path: Path) -> None:
    """Vectors stored when "Dr." ended a sentence (two rows for this text) are not read as one sentence's."""
    embedder = CountingEmbedder()
    text = "Sam: I saw Dr. Manning today."
    old = reopen(tmp_path)
    old.put("a", text_digest(f"labels-per-sentence-1\n{text}"), vecs(2, 2))
    old.close()
    keeper = SentenceVectors(embedder.embed, reopen(tmp_path))
    keeper.of({"a": (text, {"breadcrumb": "notes"})}, frozenset({"Sam"}))
    assert embedder.seen == ["Sam: I saw Dr. Manning today."]
    keeper.close()


def test_recall_after_a_restart_embeds_no_stored_sentence_again(tmp_path: Path) -> None:
    from mettaclaw.config import load_config
    from mettaclaw.memory import open_memory

    config = load_config([f"memoryDir={tmp_path / 'memory'}", "embeddingprovider=hash", "chromaMode=embedded",
                          f"knowledgePriorsDir={tmp_path / 'none'}", "dreamInterval=0"], env={})
    memory = open_memory(config)
    for i in range(30):
        memory.remember(f"Ann: We went to the lake on day {i}. The water was cold. We swam anyway {i}.")
    memory.close()
    memory = open_memory(config)
    counted = CountingEmbedder()
    counted.dim, counted.name = memory.index.embedder.dim, memory.index.embedder.name
    memory.index.embedder = memory.pipeline.index.embedder = counted
    memory.index._sentences.embed = counted.embed
    asked: list[str] = []
    store_vectors = memory.index.vector_store.vectors
    memory.index.vector_store.vectors = lambda ids: (asked.extend(ids), store_vectors(ids))[1]
    try:
        assert memory.query("did Ann swim in the lake?", 5)
        assert set(counted.seen) == {"did Ann swim in the lake?"}  # every row's sentences came from disk
        assert asked == []  # and every row's own vector
    finally:
        memory.close()


def test_row_vectors_give_the_stores_cosines_and_fill_in_for_rows_written_before(tmp_path: Path) -> None:
    from mettaclaw.memory.index.longterm import LongTermMemory
    from mettaclaw.memory.stores.vectors import InMemoryVectorStore, cosines

    store = InMemoryVectorStore()
    old = LongTermMemory(HashEmbedder(DIM), store)  # no copies kept: as a folder made before them
    ids = [old.remember(f"note {i} about the garden and the lake").id for i in range(6)]
    index = LongTermMemory(HashEmbedder(DIM), store, vectors=tmp_path)
    extra = index.remember("a note written with copies kept").id
    q = HashEmbedder(DIM).embed(["the lake"])[0]
    truth = cosines(q, ids + [extra], [store.vectors([i])[i] for i in ids + [extra]])
    asked: list[str] = []
    store_vectors = store.vectors
    store.vectors = lambda wanted: (asked.extend(wanted), store_vectors(wanted))[1]

    def similarity(wanted: list[str]) -> dict[str, float]:
        held = index.vectors_of({i: row.document for i in wanted if (row := index.row(i)) is not None})
        return cosines(q, list(held), list(held.values()))

    first = similarity(ids + [extra, "no-such-row"])
    assert first == pytest.approx(truth, abs=1e-6) and set(first) == set(truth)
    assert sorted(asked) == sorted(ids)  # only the rows written before; they are copied now
    asked.clear()
    assert similarity(ids + [extra]) == pytest.approx(truth, abs=1e-6) and asked == []
    index.forget(ids[1])
    assert ids[1] not in similarity(ids)


def test_the_dream_clusters_episodes_on_the_vectors_their_turns_indexed(tmp_path: Path) -> None:
    """The dream used to embed every episode again to cluster it (a quarter of a 10k-episode dream):
    it now takes the vector the index computed when the turn was written, and embeds only episodes
    the index does not hold with that same text."""
    from mettaclaw.config import load_config
    from mettaclaw.memory import open_memory
    from mettaclaw.memory.episodes.records import format_record

    config = load_config([f"memoryDir={tmp_path / 'memory'}", "embeddingprovider=hash", "chromaMode=embedded",
                          f"knowledgePriorsDir={tmp_path / 'none'}", "dreamInterval=0"], env={})
    said = [f"Ann: we planted {n} rows of beans in the garden on day {n}." for n in range(12)]
    trace = config.memory_path("history.metta")
    trace.parent.mkdir(parents=True)
    trace.write_text("".join(format_record(f"2026-05-{n + 1:02d} 10:00:00", text, [], None, who=("Ann",)) + "\n"
                             for n, text in enumerate(said)), encoding="utf-8")
    memory = open_memory(config, dream=False)  # indexes the trace's episodes, as after a restart
    try:
        batch = memory.dreamer.source.after(-1, 100)
        assert [ep.text for ep in batch] == said
        gone = batch[3].id
        assert memory.index.forget(gone)  # the index no longer holds this one: it must be embedded
        counted = CountingEmbedder()
        counted.dim, counted.name = memory.index.embedder.dim, memory.index.embedder.name
        memory.dreamer.embedder = counted
        vectors = memory.dreamer._vectors(batch)
        assert counted.seen == [said[3]]
        assert np.allclose(vectors, memory.index.embedder.embed(said), atol=1e-6)
        assert memory.index.vectors_of({batch[0].id: "other words", gone: said[3], "ep-999": "x"}) == {}
        assert memory.dreamer.dream("test").error is None
    finally:
        memory.close()


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_vectors_damaged_on_disk_are_computed_again_not_ranked_as_nan(tmp_path: Path, caplog, dtype: str) -> None:
    """Bytes damaged in a vectors file (a disk error) read as NaN, which gave NaN cosines that recall
    ranked with, without a word; such vectors are now none, said in the log, and put again."""
    store = reopen(tmp_path, dtype=dtype)
    store.put("a", "d1", vecs(1))
    store.put("b", "d2", vecs(2))
    store.close()
    data = next(tmp_path.glob("vectors-*.bin"))
    with open(data, "r+b") as fh:
        fh.write(b"\xff" * 8)  # the first row's first numbers: NaN in either type
    store = reopen(tmp_path, dtype=dtype)
    with caplog.at_level("WARNING", logger=keyed_vectors.__name__):
        assert store.get("a", "d1") is None
    assert any("vectors of a" in m and "damaged" in m for m in caplog.messages)
    assert np.array_equal(store.get("b", "d2"), vecs(2).astype(dtype))
    store.put("a", "d1", vecs(1))
    assert np.array_equal(store.get("a", "d1"), vecs(1).astype(dtype))


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_many_rows_read_at_once_are_what_each_read_alone_gives(tmp_path: Path, caplog, kind: str) -> None:
    """An exact search reads every row's vector at once (`many`): it must serve exactly what `get`
    serves row by row: only one-vector entries of the same text, damaged ones dropped and said."""
    store = reopen(tmp_path, dtype="float32") if kind == "file" else keyed_vectors.InMemoryKeyedVectors()
    one = {f"r{n}": vecs(n, 1).astype(np.float32) for n in range(40)}
    for row_id, vector in one.items():
        store.put(row_id, f"d-{row_id}", vector)
    store.put("multi", "d-multi", vecs(99, 3))  # a row of several sentences: not a row's one vector
    wanted = {row_id: f"d-{row_id}" for row_id in one} | {"r3": "changed", "multi": "d-multi", "absent": "d"}
    ids, rows = store.many(wanted)
    expected = [i for i in one if i != "r3"]
    assert ids == expected and rows.dtype == np.float32
    assert all(np.array_equal(rows[pos], store.get(i, f"d-{i}")[0]) for pos, i in enumerate(ids))
    assert store.many({"absent": "d"})[0] == []
    if kind == "file":
        store.close()
        data = next(tmp_path.glob("vectors-*.bin"))
        with open(data, "r+b") as fh:
            fh.write(b"\xff" * 8)  # r0's first number: NaN
        store = reopen(tmp_path, dtype="float32")
        with caplog.at_level("WARNING", logger=keyed_vectors.__name__):
            ids, rows = store.many(wanted)
        assert "r0" not in ids and len(ids) == len(expected) - 1 and np.isfinite(rows).all()
        assert any("vectors of r0" in m and "damaged" in m for m in caplog.messages)
        assert store.get("r0", "d-r0") is None  # dropped, to be put again
    store.close()
