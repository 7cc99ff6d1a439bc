"""Both record stores honour one contract; the SQLite one also persists and rolls back."""

import numpy as np
import pytest

from mettaclaw.memory.semantic import InMemorySemanticStore, RecordFilter, SemanticMemory, SemanticRecord
from mettaclaw.memory.semantic.records import Edge
from mettaclaw.memory.semantic.sqlite_store import SqliteSemanticStore
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    s = InMemorySemanticStore() if request.param == "memory" else SqliteSemanticStore(tmp_path / "sem.sqlite3")
    yield s
    s.close()


def rec(content, **kw):
    kw.setdefault("recorded_at", 100.0)
    kw.setdefault("valid_from", 100.0)
    r = SemanticRecord(content, **kw)
    r.lineage = r.lineage or r.id
    return r


def test_put_get_delete_roundtrip_keeps_every_field_and_the_vector(store):
    r = rec("Alice lives in Paris", tags=["person", "place"], source_episodes=["ep-0", "ep-9"], truth=(1.0, 0.9),
            properties={"k": "v"}, subject="alice", relation="LIVES_IN", object="paris", embedding=np.ones(4, np.float32))
    store.put(r)
    got = store.get(r.id)
    assert got.to_dict() == r.to_dict() and np.allclose(got.embedding, r.embedding)
    got.content = "mutated"
    assert store.get(r.id).content == "Alice lives in Paris"  # a returned copy is not the stored record
    store.put_edge(Edge(r.id, "ep-0", "DERIVED_FROM", 1.0, dst_layer="episodic"))
    assert store.delete(r.id) and store.get(r.id) is None and store.edges_of(r.id) == []
    assert not store.delete(r.id)


def test_select_filters(store):
    a = rec("alpha fact", tags=["x", "y"], kind="fact", category="place", confidence=0.9, recorded_at=10.0, name_norm="alpha")
    b = rec("beta concept", tags=["y"], kind="concept", confidence=0.6, recorded_at=20.0, name_norm="beta")
    c = rec("gamma old", tags=["x"], valid_from=5.0, valid_to=15.0, recorded_at=30.0, name_norm="gamma")
    for r in (a, b, c):
        store.put(r)

    def ids(**kw):
        return {r.content.split()[0] for r in store.select(RecordFilter(**kw))}

    assert ids() == {"alpha", "beta"}  # current only
    assert ids(include_history=True) == {"alpha", "beta", "gamma"}
    assert ids(as_of=12.0) == {"gamma"}  # alpha and beta became valid at 100
    assert ids(tags_all=("x", "y")) == {"alpha"}
    assert ids(tags_any=("x",), include_history=True) == {"alpha", "gamma"}
    assert ids(tags_none=("x",)) == {"beta"}
    assert ids(kinds=("concept",)) == {"beta"}
    assert ids(category="place") == {"alpha"}
    assert ids(min_confidence=0.7) == {"alpha"}
    assert ids(time_from=15.0, include_history=True) == {"beta", "gamma"}
    assert ids(time_to=15.0) == {"alpha"}
    assert ids(name_pattern="al*") == {"alpha"}
    assert ids(name_pattern="*concept") == {"beta"}
    assert [r.content for r in store.select(RecordFilter(), limit=1)] == ["beta concept"]  # newest first


def test_records_written_at_one_time_keep_the_order_they_were_written_in(store):
    """An export lists records by `iter_records` and its import writes them in that order; the listing
    (`select`) orders records of one time by when they were written. The SQLite store listed records
    by id (a random uuid order), so after a round trip records of one time were listed in another
    order; the in-memory store listed ties first-written first, the SQLite one last-written first."""
    written = [rec(f"record {n}", id=name, recorded_at=50.0) for n, name in enumerate(["m", "z", "a", "q"])]
    for r in written:
        store.put(r)
    store.put(written[1], reindex=False)  # written again (a use): still where it was first written
    assert [r.id for r in store.iter_records()] == ["m", "z", "a", "q"]
    assert [r.id for r in store.select(RecordFilter())] == ["q", "a", "z", "m"]


def test_paging_after_a_record_lists_each_record_once_though_many_share_its_time(store):
    """`after` (time, id) of the last record shown: the next page starts right after it, also among
    records of its time (a page ending inside a batch of one time skipped the rest of the batch);
    a cursor record forgotten since gives every record of its time again rather than skip one."""
    written = [rec(f"record {n}", recorded_at=at) for n, at in enumerate([10.0] * 2 + [50.0] * 9 + [90.0])]
    for r in written:
        store.put(r)
    listing = [r.id for r in store.select(RecordFilter())]
    paged, after = [], None
    while page := store.select(RecordFilter(), limit=4, after=after):
        paged += [r.id for r in page]
        after = (page[-1].recorded_at, page[-1].id)
    assert paged == listing and len(set(paged)) == len(written)
    cursor = store.get(listing[5])
    store.delete(cursor.id)
    assert [r.id for r in store.select(RecordFilter(), after=(cursor.recorded_at, cursor.id))] == \
        [i for i in listing if i != cursor.id and store.get(i).recorded_at <= 50.0]


def test_lexical_tags_summary_edges_versions_meta(store):
    a, b = rec("the red kettle boils water", tags=["kitchen"]), rec("the blue car needs fuel", tags=["kitchen", "car"])
    store.put(a)
    store.put(b)
    assert store.lexical("kettle water", 5)[0][0] == a.id
    assert store.lexical("the of", 5) == []
    assert store.tag_counts() == {"kitchen": 2, "car": 1}
    summary = store.summary()
    assert summary["records"] == 2 and summary["current"] == 2 and summary["by_kind"] == {"fact": 2}
    store.put_edge(Edge(a.id, b.id, "RELATED_TO", 0.3))
    assert [e.other(b.id) for e in store.edges_of(b.id)] == [a.id]
    store.put_relation_type("FOO", False, False)
    assert store.relation_types()["FOO"] == (False, False)
    store.log_version(a.id, "created", 1.0, {"x": 1})
    assert store.versions(a.id)[0]["snapshot"] == {"x": 1}
    store.set_meta("embedder", "hash:8")
    assert store.get_meta("embedder") == "hash:8" and store.get_meta("nope") is None
    assert store.sharing_episodes([]) == {}


def test_sqlite_rolls_back_a_failed_transaction(tmp_path):
    store = SqliteSemanticStore(tmp_path / "s.sqlite3")
    r = rec("kept")
    store.put(r)
    with pytest.raises(RuntimeError), store.transaction():
        store.put(rec("lost"))
        store.delete(r.id)
        raise RuntimeError("boom")
    assert [x.content for x in store.iter_records()] == ["kept"]
    store.close()


def test_a_store_indexed_by_an_earlier_tokenizer_is_indexed_again_when_opened(tmp_path):
    """FTS5 holds `text.terms`, so its words must be the ones the query is split into: a store whose
    index was written by another tokenizer (raw text, older stems) is re-indexed once at open."""
    from mettaclaw.memory.semantic.sqlite_store import FTS_FORMAT

    store = SqliteSemanticStore(tmp_path / "s.sqlite3")
    r = rec("Three families came to the reunion")
    store.put(r)
    store._db.execute("UPDATE records_fts SET text = 'three family came reunion'")  # what the old stems wrote
    store.set_meta(FTS_FORMAT[0], "terms-1")  # ... and the mark they left (a folder from before Snowball stems)
    assert store.lexical("family", 5) == []  # "families" was 'family', "family" 'fami'
    store.close()
    reopened = SqliteSemanticStore(tmp_path / "s.sqlite3")
    assert [i for i, _ in reopened.lexical("family", 5)] == [r.id]
    assert reopened.get_meta(FTS_FORMAT[0]) == FTS_FORMAT[1]
    reopened.close()


def test_memory_on_sqlite_survives_a_restart(tmp_path):
    """Records, edges, versions and learned relation types are on disk; vectors come from the store
    that holds them (here a fresh in-memory one is refilled from the records' stored vectors)."""
    path = tmp_path / "sem.sqlite3"
    mem = SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), SqliteSemanticStore(path))
    old = mem.learn("Heidi lives in Prague", tags=["person"], source_episodes=["ep-10"])
    new = mem.learn("Heidi moved to Vienna", tags=["person"])
    edge = mem.relate("Heidi", "MENTORS", "Ivan")
    mem.close()

    store = SqliteSemanticStore(path)
    vectors = InMemoryVectorStore()
    recs = list(store.iter_records())
    vectors.add([r.id for r in recs], np.stack([r.embedding for r in recs]), [r.content for r in recs],
                [{} for _ in recs])
    again = SemanticMemory(HashEmbedder(256), vectors, store)
    assert again.get(old.id).superseded_by == new.id
    assert [r.id for r in again.history(new.id)] == [old.id, new.id]
    assert "MENTORS" in again.relations.types() and not again.relations.types()["MENTORS"]["builtin"]
    assert store.get_edge(edge.src, edge.dst, "MENTORS").weight == pytest.approx(0.1)
    assert again.tags() == {"person": 1}
    assert again.learn("Heidi lives in Vienna").action == "reinforced"
    again.close()


def test_write_behind_vectors_are_searched_before_a_flush_and_replayed_after_a_crash(tmp_path):
    path = tmp_path / "wb.sqlite3"
    index = InMemoryVectorStore()
    mem = SemanticMemory(HashEmbedder(256), index, SqliteSemanticStore(path), flush_every=3)
    a = mem.learn("Kim repairs old radios")
    assert index.count() == 0 and mem.records.queued_vectors() == [a.id]
    assert mem.recall("radios")[0].id == a.id  # found in the buffer
    assert mem.learn("Kim repairs old radios").id == a.id  # and reconciled against it
    mem.learn("Lee collects stamps")
    mem.learn("Mo bakes sourdough bread")
    assert index.count() == 3 and mem.records.queued_vectors() == []  # flushed as one batch
    d = mem.learn("Nia grows tomatoes")
    mem.records.close()  # a crash: no flush, no close of the memory

    again = SemanticMemory(HashEmbedder(256), index, SqliteSemanticStore(path))
    assert index.get([d.id]) and again.records.queued_vectors() == []  # the queue was replayed
    assert again.recall("tomatoes")[0].id == d.id
    again.forget(d.id)
    assert not index.get([d.id])
    again.close()


def test_a_background_writer_and_a_reader_share_one_memory(tmp_path):
    """The dream phase writes from a thread while the agent's turn recalls: no error, nothing lost."""
    import threading

    mem = SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), SqliteSemanticStore(tmp_path / "t.sqlite3"),
                         flush_every=7)
    errors: list[BaseException] = []

    def write():
        try:
            for i in range(150):
                mem.learn(f"Sensor {i} reads {i * 3} degrees")
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    writer = threading.Thread(target=write)
    writer.start()
    while writer.is_alive():
        mem.recall("sensor degrees", limit=5)
    writer.join()
    assert errors == [] and len(mem) == 150
    mem.flush()
    assert mem.vectors.index.count() == 150
    mem.close()


def damage_past_the_start(path) -> None:
    """Overwrite every other page of the file's last three quarters (a disk error): SQLite opens it and
    reads its schema, and a read that reaches one of those pages finds the file malformed."""
    page = 4096
    pages = path.stat().st_size // page
    with open(path, "r+b") as fh:
        for n in range(pages // 4, pages, 2):
            fh.seek(n * page)
            fh.write(b"\xa5" * page)


def filled_store(path, count: int = 1500) -> None:
    store = SqliteSemanticStore(path)
    with store.transaction():
        for i in range(count):
            store.put(rec(f"Fact {i}: the kettle number {i} sits beside window {i % 13}.", tags=["kitchen"],
                          embedding=np.full(8, i, np.float32)))
    store.close()


def test_a_store_damaged_past_its_first_pages_says_which_file_and_what_to_do_when_used(tmp_path):
    """Damage past the pages read at open is not found at open (reading the whole file there, PRAGMA
    quick_check, costs the restart too much at 100k records): the first read or write that reaches
    it raised sqlite3's bare "database disk image is malformed", and the dream and recall failed as an
    internal error naming no file. Now it is StoreDamaged, naming the file and the way out."""
    from mettaclaw.memory.errors import StoreDamaged

    path = tmp_path / "semantic" / "records.sqlite3"
    filled_store(path)
    damage_past_the_start(path)
    store = SqliteSemanticStore(path)  # opens: its first pages are whole
    try:
        for use in (lambda: list(store.iter_records()), lambda: store.lexical("kettle window", 5),
                    lambda: store.put(rec("A new fact about the hall."))):
            with pytest.raises(StoreDamaged) as err:
                use()
            said = str(err.value)
            assert said.startswith(f"the semantic store {path} is damaged ("), said  # SQLite's words follow
            assert f"mv {path} {path}.damaged" in said and "is restored" in said, said
        with pytest.raises(ValueError), store.transaction():  # the store still works for what is whole
            raise ValueError("rolled back")
    finally:
        store.close()


def test_a_turn_on_a_damaged_semantic_store_goes_on_and_the_skill_says_what_to_do(tmp_path, make_agent):
    """`recall` and `learn` on a semantic store damaged past its first pages were 'internal error
    DatabaseError: database disk image is malformed'; now each is its skill's error naming the file
    (and the prompt's knowledge block says it so), the turn's other commands run, and the next turn runs."""
    path = tmp_path / "memory" / "semantic" / "records.sqlite3"
    filled_store(path)
    damage_past_the_start(path)
    agent, llm, channel, _ = make_agent(["recall kettle window\nlearn The kettle is in the hall.\nsend done", "send again"],
                                        ["where is the kettle window?"])
    first = agent.turn()
    prompt = "\n".join(llm.prompts[0])  # the knowledge block read the store too: said the same way
    assert f"ERROR: the semantic store {path} is damaged" in prompt and "internal error" not in prompt
    assert [r.split(" -> ", 1)[1][:60] for r in first.results[:2]] == \
        [f"ERROR: {skill}: the semantic store {path}"[:60] for skill in ("recall", "learn")], first.results
    assert all("is damaged" in r and "internal error" not in r for r in first.results[:2]), first.results
    assert first.results[2].endswith("SENT") and channel.sent == ["done"]
    channel.put("and now?")
    assert agent.turn().results[-1].endswith("SENT") and channel.sent == ["done", "again"]
