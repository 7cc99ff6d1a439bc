"""ChromaVectorStore, embedded: the VectorStore contract, embedder signature, and the folder lock."""

from __future__ import annotations

import copy
import subprocess
import sys

import numpy as np
import pytest

from mettaclaw.memory.errors import EmbedderMismatch, StoreLocked, StoreUnavailable
from mettaclaw.memory.index.longterm import LongTermMemory
from mettaclaw.memory.stores.chroma import DEFAULT_HNSW, ChromaVectorStore
from mettaclaw.memory.stores.embedders import HashEmbedder, make_embedder, signature
from mettaclaw.memory.stores.vectors import InMemoryVectorStore, VectorStore

SIG = signature(HashEmbedder())


@pytest.fixture
def store(tmp_path):
    s = ChromaVectorStore.embedded(tmp_path / "chroma", embedder_signature=SIG)
    yield s
    s.close()


def _rows(n: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, 64)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_contract_round_trip_matches_the_exact_store(store: ChromaVectorStore) -> None:
    assert isinstance(store, VectorStore)
    exact = InMemoryVectorStore()
    vecs = _rows(40)
    ids = [f"id{i}" for i in range(40)]
    metas = [{"source": "a" if i % 2 else "b", "n": i, "skip": None} for i in range(40)]
    assert store.count() == 0  # counted before the writes: each write must drop the count it keeps
    for s in (store, exact):
        s.add(ids, vecs, [f"doc {i}" for i in range(40)], metas)
    assert store.count() == 40
    assert [it.document for it in store.get(["id3", "missing", "id1"])] == ["doc 3", "doc 1"]
    assert store.get(["id3"])[0].metadata == {"source": "a", "n": 3}, "None values are dropped"
    q = vecs[5] + 0.1 * vecs[6]
    got = store.query(q, 5)
    want = exact.query(q, 5)
    assert [it.id for it, _ in got] == [it.id for it, _ in want]
    assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-4)
    assert got[0][0].document and got[0][0].metadata  # a full query carries the rows
    bare = store.query(q, 5, bare=True)  # ids and similarities only, for callers holding their own copy
    assert [(it.id, round(sim, 5)) for it, sim in bare] == [(it.id, round(sim, 5)) for it, sim in got]
    assert all(it.document == "" and it.metadata == {} for it, _ in bare)
    filtered = store.query(q, 5, where={"source": "b"})
    assert all(it.metadata["source"] == "b" for it, _ in filtered) and len(filtered) == 5
    assert sorted(it.id for it in store.find({"n": {"$lt": 3}})) == ["id0", "id1", "id2"]
    store.delete(["id0", "id1"])
    assert store.count() == 38 and len(list(store.iter_all(batch=7))) == 38


def test_other_embedder_is_refused_with_a_clear_message(tmp_path) -> None:
    first = ChromaVectorStore.embedded(tmp_path, embedder_signature=SIG)
    first.add(["x"], _rows(1), ["x"], [{"kind": "memory"}])
    first.close()
    with pytest.raises(EmbedderMismatch, match="st:all-MiniLM-L6-v2:384.*hash:64|hash:64.*st:all-MiniLM"):
        ChromaVectorStore.embedded(tmp_path, embedder_signature="st:all-MiniLM-L6-v2:384")
    again = ChromaVectorStore.embedded(tmp_path, embedder_signature=SIG)  # the refusal released the lock
    assert again.count() == 1, "nothing was mixed or lost"
    again.close()


def test_second_opener_is_refused_while_the_first_holds_the_folder(tmp_path, store) -> None:
    with pytest.raises(StoreLocked, match="in use by another process"):
        ChromaVectorStore.embedded(tmp_path / "chroma", embedder_signature=SIG)
    code = (
        "import sys\nfrom mettaclaw.memory.stores.chroma import ChromaVectorStore, StoreLocked\n"
        f"try:\n    ChromaVectorStore.embedded({str(tmp_path / 'chroma')!r}, embedder_signature='hash:64')\n"
        "except StoreLocked as e:\n    print('LOCKED', e); sys.exit(3)\n"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert other.returncode == 3 and "LOCKED" in other.stdout


def test_memories_survive_close_and_reopen(tmp_path) -> None:
    ltm = LongTermMemory(HashEmbedder(), ChromaVectorStore.embedded(tmp_path, embedder_signature=SIG))
    written = ltm.remember("the spare key is under the blue flowerpot", tags=["home"], time="2024-04-04")
    assert ltm.query("spare key flowerpot", limit=1)[0].id == written.id, "queryable in the same turn"
    ltm.close()
    reopened = LongTermMemory(HashEmbedder(), ChromaVectorStore.embedded(tmp_path, embedder_signature=SIG))
    hit = reopened.query("where is the spare key", tags=["home"], limit=1)[0]
    assert (hit.id, hit.time, hit.tags) == (written.id, "2024-04-04 00:00:00", ("home",))
    reopened.close()


def test_a_store_made_with_older_hnsw_settings_takes_the_adjustable_defaults_and_keeps_its_rows(tmp_path) -> None:
    """Chroma applies a configuration only when it creates a collection, so a folder from before a
    change of sync_threshold (1000, Chroma's own) is adjusted when it is opened; nothing is lost."""
    older = ChromaVectorStore.embedded(tmp_path, embedder_signature=SIG, hnsw={**DEFAULT_HNSW, "sync_threshold": 1000})
    older.add([f"r{i}" for i in range(30)], _rows(30), [f"row {i}" for i in range(30)], [{"n": i} for i in range(30)])
    assert older._col.configuration["hnsw"]["sync_threshold"] == 1000
    older.close()
    store = ChromaVectorStore.embedded(tmp_path, embedder_signature=SIG)
    assert store._col.configuration["hnsw"]["sync_threshold"] == DEFAULT_HNSW["sync_threshold"] != 1000
    assert store.count() == 30
    assert store.query(_rows(30)[7], 1)[0][0].id == "r7"
    store.close()


def test_unreachable_server_is_reported() -> None:
    with pytest.raises(StoreUnavailable, match="chroma run"):
        ChromaVectorStore.server("127.0.0.1", 9, embedder_signature=SIG)


def test_open_longterm_puts_the_store_under_the_memory_folder(tmp_path) -> None:
    from mettaclaw.config import Config
    from mettaclaw.memory.index.longterm import open_longterm

    config = Config(memoryDir=str(tmp_path / "mem"), embeddingprovider="hash", chromaMode="embedded",
                    recallMode="bm25", maxRecallItems=3)
    ltm = open_longterm(config, make_embedder(config))
    try:
        for i in range(5):
            ltm.remember(f"kettle note {i}")
        assert len(ltm.query("kettle")) == 3 and ltm.default_mode == "bm25"
        assert (tmp_path / "mem" / "chroma" / "mettaclaw.memory.lock").exists()
    finally:
        ltm.close()
    in_memory = open_longterm(config.model_copy(update={"chromaMode": "memory"}), make_embedder(config.model_copy(update={"chromaMode": "memory"})))
    assert len(in_memory) == 0 and not (tmp_path / "mem2").exists()


def test_the_index_snapshot_restores_exactly_and_a_crash_never_leaves_a_stale_one(tmp_path) -> None:
    """A clean close writes the in-process state; the next open restores it (same rows, same ranking)
    without reading the store; the first write after open deletes it, so a crash before the next
    clean close leaves none and the open after it rebuilds from the store."""
    from mettaclaw.memory.core.text import TERMS_VERSION
    from mettaclaw.memory.index import snapshot
    from mettaclaw.memory.index.longterm import LongTermMemory

    folder, snap = tmp_path / "chroma", tmp_path / "index-snapshot"
    sig = signature(HashEmbedder())

    def open_index() -> LongTermMemory:
        return LongTermMemory(HashEmbedder(), ChromaVectorStore.embedded(folder, embedder_signature=sig), snapshot=snap)

    first = open_index()
    for n in range(300):
        first.remember(f"kettle note {n} about the {['red', 'blue', 'green'][n % 3]} kettle", tags=["k"])
    first.forget(first.query("kettle note 7", limit=1, mode="bm25")[0].id)
    expected = [(m.id, m.text) for m in first.query("blue kettle note", limit=10)]
    filters, by_hash = copy.deepcopy((first._filters.by, first._filters.ts)), dict(first._by_hash)
    first.close()
    assert (snap / "meta.json").is_file()
    reads = []
    original = ChromaVectorStore.iter_all
    ChromaVectorStore.iter_all = lambda self, batch=1000: reads.append(1) or original(self, batch)
    try:
        second = open_index()
        assert not reads, "a valid snapshot is restored without reading every row back"
        assert [(m.id, m.text) for m in second.query("blue kettle note", limit=10)] == expected
        assert len(second) == 299 and second.ids_by(tags=["k"]) == {i for i in second.ids_by()}
        assert (second._filters.by, second._filters.ts) == filters and second._by_hash == by_hash  # restored as they were
        assert not second.remember("kettle note 12 about the red kettle", tags=["k"]).created
        second.remember("a brand new note about the silver kettle")  # the first write drops the snapshot
        assert not snap.exists()
        second.vector_store.close()  # a crash: no clean close, so no snapshot is written
        third = open_index()
        assert reads, "without a snapshot the index is rebuilt from the store"
        assert len(third) == 300 and third.query("silver kettle", limit=1)[0].text.endswith("silver kettle")
    finally:
        ChromaVectorStore.iter_all = original
    third.close()
    assert snapshot.load(snap, sig, 300, lambda ids: {}) is not None
    meta = (snap / "meta.json").read_bytes()
    (snap / "meta.json").write_bytes(meta.replace(sig.encode(), b"other:3"))
    assert snapshot.load(snap, sig, 300, lambda ids: {}) is None  # another embedder's snapshot is refused
    (snap / "meta.json").write_bytes(meta.replace(TERMS_VERSION.encode(), b"terms-of-an-older-tokenizer"))
    assert snapshot.load(snap, sig, 300, lambda ids: {}) is None  # its BM25 index holds other words: refused
    (snap / "meta.json").write_bytes(meta)
    for broken in (b'{"kind": ["not", "a", "map"]}', b'{"kind": {}, "source": {}, "tag": {}}',
                   b"{not json"):
        (snap / "filters.json").write_bytes(broken)  # damaged, or not the rows' filters: rebuilt from the store
        assert snapshot.load(snap, sig, 300, lambda ids: {}) is None
    reopened = open_index()
    assert len(reopened) == 300 and len(reopened.ids_by(tags=["k"])) == 299  # the silver kettle has no tag
    reopened.close()


def test_a_vector_segment_not_on_disk_yet_is_asked_again(store, monkeypatch) -> None:
    """Embedded Chroma 1.x sometimes fails a query around a collection's first flush ("Error creating
    hnsw segment reader: Nothing found on disk"); a moment later the same query is answered."""
    from mettaclaw.memory.stores import chroma

    monkeypatch.setattr(chroma, "SEGMENT_RETRIES", (0.0, 0.0))
    vector = HashEmbedder().embed(["the kayak is in the shed"])[0]
    store.add(["k"], [vector], ["the kayak is in the shed"], [{"time": "2026-01-01 00:00:00"}])
    real, failures = store._col.query, iter([RuntimeError("Error creating hnsw segment reader: Nothing found on disk")])

    def flaky(**kwargs):
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real(**kwargs)

    monkeypatch.setattr(store._col, "query", flaky)
    assert [item.id for item, _ in store.query(vector, 1)] == ["k"]
    failures = iter([RuntimeError("Error creating hnsw segment reader: Nothing found on disk")] * 3)
    with pytest.raises(RuntimeError, match="hnsw segment reader"):  # past the retries it is the store's error
        store.query(vector, 1)
    failures = iter([RuntimeError("something else")])
    with pytest.raises(RuntimeError, match="something else"):
        store.query(vector, 1)


def _damage(segment, how: str) -> None:
    """What a process killed while Chroma rewrites a vector segment in place (or a careless hand) leaves."""
    import shutil

    if how == "folder deleted":
        shutil.rmtree(segment)
        return
    name, cut = {"pickle emptied": ("index_metadata.pickle", 0), "pickle cut": ("index_metadata.pickle", 0.5),
                 "rows cut": ("data_level0.bin", 0.5), "header zeroed": ("header.bin", None),
                 "lengths cut": ("length.bin", 0.5)}[how]
    data = (segment / name).read_bytes()
    (segment / name).write_bytes(b"\0" * len(data) if cut is None else data[: int(len(data) * cut)])


def _vector_segment(folder):
    return next(p for p in folder.iterdir() if p.is_dir() and "." not in p.name)


@pytest.mark.parametrize("how", ["pickle emptied", "pickle cut", "rows cut", "header zeroed", "lengths cut",
                                 "folder deleted", "pickle emptied after deletes"])
def test_a_damaged_vector_index_is_set_aside_and_built_again_losing_no_row(tmp_path, how) -> None:
    """A kill -9 while Chroma saved its HNSW index left index_metadata.pickle empty, and the memory
    folder could not be opened again ("Error deserializing pickle file"); a deleted segment folder
    made Chroma answer from the few rows its log still held. Each row's text survives in the store
    and its vector in the index's copies (or is embedded again): the index is built anew from them,
    said once, and every row is its own nearest neighbour again."""
    from mettaclaw.config import Config
    from mettaclaw.memory.index.longterm import open_longterm

    config = Config(memoryDir=str(tmp_path / "mem"), embeddingprovider="hash", chromaMode="embedded")
    texts = [f"note {i}: {' '.join(f'w{(i * 7 + j) % 997}' for j in range(6))}" for i in range(300)]
    ltm = open_longterm(config, make_embedder(config))
    ids = [r.id for r in ltm.remember_many([{"text": t} for t in texts])]
    kept = range(0, 300, 7)
    if how.endswith("after deletes"):  # the index is built again from fewer rows than Chroma saves at once
        ltm.forget_many([ids[i] for i in range(300) if i not in kept])
        how = how.removesuffix(" after deletes")
    ltm.close()
    folder = tmp_path / "mem" / "chroma"
    _damage(_vector_segment(folder), how)
    if how == "pickle cut":  # and some copies gone: those rows are embedded again
        import shutil
        shutil.rmtree(tmp_path / "mem" / "index-vectors" / "rows")

    again = open_longterm(config, make_embedder(config))
    try:
        assert len(again) in (300, len(kept)) and len(again.notices) == 1 and "built again" in again.notices[0], again.notices
        assert any(p.name.endswith(tuple("0123456789")) and ".corrupt-" in p.name for p in folder.iterdir()) \
            or how == "folder deleted"
        raw = again.vector_store.index
        vectors = again.embedder.embed([texts[i] for i in kept])
        for n, i in enumerate(kept):
            assert raw.query(vectors[n], 1)[0][0].id == ids[i], (how, i)
    finally:
        again.close()
    reopened = open_longterm(config, make_embedder(config))
    try:
        assert not reopened.notices, "repaired once, not at every start"
        vectors = reopened.embedder.embed([texts[i] for i in kept])
        assert [reopened.vector_store.index.query(v, 1)[0][0].id for v in vectors] == [ids[i] for i in kept]
    finally:
        reopened.close()


def test_a_damaged_semantic_vector_index_is_built_again_from_the_records(tmp_path) -> None:
    from mettaclaw.config import load_config
    from mettaclaw.memory.semantic import open_semantic

    cfg = load_config([f"memoryDir={tmp_path / 'memory'}", "embeddingprovider=hash"], env={})
    mem = open_semantic(cfg, HashEmbedder(256))
    learned = [mem.learn(f"Person{i} keeps {i} {'owls' if i % 2 else 'goats'} in town{i * 31 % 101}").id
               for i in range(150)]
    mem.close()
    _damage(_vector_segment(cfg.memory_path("semantic") / "chroma"), "pickle emptied")
    again = open_semantic(cfg, HashEmbedder(256))
    try:
        assert again.vectors.count() == again.records.count() >= 150
        for rec in again.records.get_many(learned[::10]):
            assert again.vectors.index.query(rec.embedding, 1)[0][0].id == rec.id
    finally:
        again.close()


def test_a_tag_naming_one_record_is_no_chroma_key_yet_filters_and_reads_back(tmp_path) -> None:
    """Chroma keeps every metadata key it has seen in the collection's schema for good: one
    `tag:sem:<record>` key per mirrored record grew it with every fact the dream ever wrote."""
    from mettaclaw.config import Config
    from mettaclaw.memory.index.longterm import open_longterm

    config = Config(memoryDir=str(tmp_path / "mem"), embeddingprovider="hash", chromaMode="embedded")
    ltm = open_longterm(config, make_embedder(config))
    try:
        row = ltm.remember("Judy moved to Madrid", tags=["derived", "sem:abc"], kind="derived").id
        ltm.vector_store.add(["old"], ltm.embedder.embed(["Judy once lived in Lisbon"]), ["Judy once lived in Lisbon"],
                             [{"time": "2026-01-01 00:00:00", "source": "dream", "kind": "derived",
                               "tags": "|derived|sem:old|", "tag:derived": True, "tag:sem:old": True, "hash": "h"}])
        ltm.vector_store.flush()
        stored = ltm.vector_store.index.get([row])[0].metadata
        assert "tag:derived" in stored and "tag:sem:abc" not in stored
        assert ltm.ids_by(tags=["sem:abc"]) == {row}
        assert [m.id for m in ltm.query("Madrid", tags=["sem:abc"], mode="vector")] == [row]
    finally:
        ltm.close()
    again = open_longterm(config, make_embedder(config))
    try:
        old = again.get("old")
        assert old is not None and old.tags == ("derived", "sem:old") and "tag:sem:old" not in old.meta
        assert again.ids_by(tags=["sem:old"]) == {"old"}
    finally:
        again.close()


def test_a_rebuild_cut_short_is_done_again_at_the_next_open(tmp_path, monkeypatch) -> None:
    """The index set aside is written back row batch by row batch; cut short (a kill, a full disk), the
    next open saw a fresh index with some rows and nothing to repair: the rest stayed unfindable."""
    from mettaclaw.config import Config
    from mettaclaw.memory.index import longterm

    config = Config(memoryDir=str(tmp_path / "mem"), embeddingprovider="hash", chromaMode="embedded")
    texts = [f"note {i}: {' '.join(f'w{(i * 7 + j) % 997}' for j in range(6))}" for i in range(300)]
    ltm = longterm.open_longterm(config, make_embedder(config))
    ids = [r.id for r in ltm.remember_many([{"text": t} for t in texts])]
    ltm.close()
    _damage(_vector_segment(tmp_path / "mem" / "chroma"), "pickle emptied")
    monkeypatch.setattr(longterm, "RESTORE_BATCH", 40)
    written, add = [], ChromaVectorStore.add

    def cut(store, ids, vectors, documents, metadatas):
        if written:
            raise OSError("No space left on device")
        written.append(add(store, ids, vectors, documents, metadatas))

    with monkeypatch.context() as patch:
        patch.setattr(ChromaVectorStore, "add", cut)
        with pytest.raises(OSError, match="No space"):
            longterm.open_longterm(config, make_embedder(config))
    again = longterm.open_longterm(config, make_embedder(config))
    try:
        assert len(again.notices) == 1 and "rebuild was cut short" in again.notices[0], again.notices
        vectors = again.embedder.embed(texts)
        assert [again.vector_store.index.query(v, 1)[0][0].id for v in vectors[::5]] == ids[::5]
    finally:
        again.close()
    assert not (tmp_path / "mem" / "chroma" / "mettaclaw.rebuilding").exists()


def _assert_opens_whole(folder, rows: int) -> None:
    """The store in `folder` opens again with all its `rows`, its vector index not taken for damaged."""
    again = ChromaVectorStore.embedded(folder, embedder_signature=SIG)
    try:
        assert again.vectors_lost is None and again.count() == rows
    finally:
        again.close()


def test_an_index_saved_with_fewer_rows_than_its_capacity_is_not_taken_for_a_damaged_one(tmp_path) -> None:
    """A new index Chroma saves (here after 105 writes to 35 rows) writes its whole capacity: its files
    are longer than its rows, which is no damage (the crash campaign's reopen repaired it each time)."""
    store = ChromaVectorStore.embedded(tmp_path / "chroma", embedder_signature=SIG)
    for version in range(3):
        store.add([f"r{i}" for i in range(35)], _rows(35, version), ["d"] * 35, [{"v": version}] * 35)
    store.close()
    _assert_opens_whole(tmp_path / "chroma", 35)


def test_rows_with_a_vector_of_no_direction_are_not_taken_for_a_damaged_index(tmp_path) -> None:
    """The hash embedder gives a text of no word ("👍", "?") the zero vector, which no search finds at
    distance 0, not even itself: two such rows among the probed ones made the folder unopenable,
    "the vector index cannot be read"."""
    store = ChromaVectorStore.embedded(tmp_path / "chroma", embedder_signature=SIG)
    vectors = np.vstack([_rows(3), np.zeros((2, _rows(1).shape[1]), dtype=np.float32)])
    store.add([f"r{i}" for i in range(5)], vectors, ["d"] * 5, [{"v": 1}] * 5)
    store.close()
    _assert_opens_whole(tmp_path / "chroma", 5)


def test_an_index_mostly_of_deleted_rows_is_built_anew_with_the_live_ones(tmp_path) -> None:
    """Chroma 1.5.9 keeps deleted rows in its graph, and after many deletes and upserts live rows drop
    out of every search (chroma-core/chroma#7758). An index whose graph is mostly deleted rows is
    built anew from the live ones at open, once."""
    from mettaclaw.config import Config
    from mettaclaw.memory.index.longterm import open_longterm

    config = Config(memoryDir=str(tmp_path / "mem"), embeddingprovider="hash", chromaMode="embedded")
    texts = [f"note {i}: {' '.join(f'w{(i * 7 + j) % 997}' for j in range(6))}" for i in range(400)]
    ltm = open_longterm(config, make_embedder(config))
    ids = [r.id for r in ltm.remember_many([{"text": t} for t in texts])]
    ltm.forget_many(ids[:250])
    ltm.remember_many([{"text": f"fresh {i}"} for i in range(100)])  # Chroma saves the graph with its deletes
    ltm.close()
    again = open_longterm(config, make_embedder(config))
    try:
        assert len(again.notices) == 1 and "deleted ones" in again.notices[0], again.notices
        vectors = again.embedder.embed(texts[250:])
        assert [again.vector_store.index.query(v, 1)[0][0].id for v in vectors] == ids[250:]
    finally:
        again.close()
    reopened = open_longterm(config, make_embedder(config))
    try:
        assert not reopened.notices
    finally:
        reopened.close()
