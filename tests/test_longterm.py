"""LongTermMemory on the in-memory store and the hash embedder: behaviour, not speed."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import CountingEmbedder, record_deletes

from mettaclaw.memory.core.layers import MemoryLayer
from mettaclaw.memory.core.times import time_key
from mettaclaw.memory.errors import EmbedderMismatch
from mettaclaw.memory.index import longterm
from mettaclaw.memory.index.longterm import IndexRow, LongTermMemory
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore


@pytest.fixture
def ltm() -> LongTermMemory:
    return LongTermMemory(HashEmbedder(), InMemoryVectorStore())


def test_exact_duplicate_is_refreshed_not_stored_twice(ltm: LongTermMemory) -> None:
    first = ltm.remember("Ada likes green tea", time="2024-01-01 09:00:00", tags=["food"])
    again = ltm.remember("Ada likes green tea", time="2024-03-01 09:00:00", tags=["drinks"], source="other")
    assert first.created and not again.created and again.id == first.id
    assert len(ltm) == 1 and ltm.vector_store.count() == 1
    got = ltm.get(first.id)
    assert got.time == "2024-03-01 09:00:00" and got.tags == ("food", "drinks") and got.source == "agent"
    assert [m.id for m in ltm.query("green tea", since="2024-02-01")] == [first.id], "refreshed time is filterable"
    assert ltm.remember("Ada likes green tea!").created, "a different text is not a duplicate"
    assert ltm.remember("Ada likes green tea", kind="belief", atom="(--> ada tea)").created


def test_duplicates_inside_one_batch_are_stored_once(ltm: LongTermMemory) -> None:
    results = ltm.remember_many([{"text": "same"}, {"text": "other"}, {"text": "same", "tags": ["x"]}])
    assert [r.created for r in results] == [True, True, False]
    assert results[0].id == results[2].id and len(ltm) == 2
    assert ltm.get(results[0].id).tags == ("x",)


def test_query_returns_time_score_and_is_limited(ltm: LongTermMemory) -> None:
    for i in range(30):
        ltm.remember(f"note {i} about gardening tomatoes", time=f"2024-01-{i % 28 + 1:02d} 10:00:00")
    found = ltm.query("gardening tomatoes", limit=7)
    assert len(found) == 7 and all(isinstance(m, IndexRow) for m in found)
    assert all(m.time.startswith("2024-01-") and m.score > 0 for m in found)
    assert [m.score for m in found] == sorted((m.score for m in found), reverse=True)
    assert len(ltm.query("gardening")) == 20, "default limit is max_items"


def test_same_turn_recall_in_every_mode(ltm: LongTermMemory) -> None:
    for i in range(300):
        ltm.remember(f"filler memory number {i} about the weather")
    ltm.query("weather")  # builds the BM25 index; later writes land in its delta
    written = ltm.remember("The launch code word is periwinkle")
    for mode in ("hybrid", "vector", "bm25"):
        assert ltm.query("launch code word periwinkle", mode=mode, limit=3)[0].id == written.id


def test_filters_by_time_source_tags_and_kind(ltm: LongTermMemory) -> None:
    ltm.remember("walked the dog in the park", time="2024-01-05 08:00:00", source="diary", tags=["pets", "outdoors"])
    ltm.remember("fed the dog", time="2024-02-10 08:00:00", source="diary", tags=["pets"])
    ltm.remember("dog article read", time="2024-03-01 12:00:00", source="web", tags=["reading"])
    ltm.remember("(--> dog animal)", kind="belief", atom="(--> dog animal) (stv 1.0 0.9)", time="2024-02-01")
    ltm.remember("dogs are loyal", time="knowledge_prior", source="animals.md", kind="prior")
    texts = lambda **f: sorted(m.text for m in ltm.query("dog", **f))  # noqa: E731
    assert texts(source="web") == ["dog article read"]
    assert texts(tags=["pets"]) == ["fed the dog", "walked the dog in the park"]
    assert texts(tags=["pets", "outdoors"]) == ["walked the dog in the park"]
    assert texts(tags=["nope"]) == []
    assert texts(since="2024-02-01", until="2024-02-28") == ["(--> dog animal)", "fed the dog"]
    assert texts(until="2024-01-05") == ["walked the dog in the park"], "a date-only `until` includes that day"
    assert texts(since="2024-02-11") == ["dog article read"], "priors have no time and fall outside any range"
    beliefs = ltm.query("dog", kind="belief")
    assert [m.atom for m in beliefs] == ["(--> dog animal) (stv 1.0 0.9)"]
    assert texts(kind="prior", mode="vector") == ["dogs are loyal"]
    assert texts(source="diary", since="2024-02-01", mode="bm25") == ["fed the dog"]


def test_bad_input_is_refused_and_loses_nothing(ltm: LongTermMemory) -> None:
    ltm.remember("keep me")
    for bad in ("", "   "):
        with pytest.raises(ValueError, match="empty"):
            ltm.remember(bad)
    with pytest.raises(ValueError, match="bad time"):
        ltm.remember("x", time="yesterday")
    with pytest.raises(ValueError, match="tags"):
        ltm.remember("x", tags=["a|b"])
    with pytest.raises(ValueError, match="reserved"):
        ltm.remember("x", extra={"source": "forged"})
    with pytest.raises(ValueError, match="unknown recall mode"):
        ltm.query("keep", mode="magic")
    with pytest.raises(ValueError, match="empty"):
        ltm.query("  ")
    with pytest.raises(ValueError, match="bad time"):
        ltm.query("keep", since="last week")
    assert [m.text for m in ltm] == ["keep me"]


def test_forget_removes_from_every_index_and_announces(ltm: LongTermMemory) -> None:
    captured, deleted = [], []
    ltm.on_capture(lambda i, m: captured.append((i, m.text)))
    ltm.on_delete(lambda i, m: deleted.append(i))
    kept = ltm.remember("the blue kettle is in the attic")
    gone = ltm.remember("the red kettle is in the garage")
    assert captured == [(kept.id, "the blue kettle is in the attic"), (gone.id, "the red kettle is in the garage")]
    assert ltm.forget(gone.id) and not ltm.forget(gone.id)
    assert deleted == [gone.id]
    for mode in ("hybrid", "vector", "bm25"):
        assert [m.id for m in ltm.query("red kettle garage", mode=mode)] == [kept.id]


def test_forget_many_deletes_in_one_store_call_and_reports_what_was_held(ltm: LongTermMemory) -> None:
    """The dream retires hundreds of mirrored records a run: one store delete for all, not one each."""
    ids = [ltm.remember(f"jar {n} of plum jam is on shelf {n}").id for n in range(5)]
    deletes, deleted = record_deletes(ltm.vector_store), []
    ltm.on_delete(lambda i, m: deleted.append((i, m.text)))
    assert ltm.forget_many([ids[1], "no-such-id", ids[3], ids[1]]) == [ids[1], ids[3]]
    assert deletes == [[ids[1], ids[3]]]
    assert deleted == [(ids[1], "jar 1 of plum jam is on shelf 1"), (ids[3], "jar 3 of plum jam is on shelf 3")]
    assert ltm.forget_many([ids[1]]) == [] and len(deletes) == 1, "nothing held: no store call"
    assert sorted(m.id for m in ltm) == sorted([ids[0], ids[2], ids[4]])
    assert {m.id for m in ltm.query("plum jam shelf", mode="vector")} == {ids[0], ids[2], ids[4]}

def test_reopening_rebuilds_the_mirror_from_the_store() -> None:
    store = InMemoryVectorStore()
    first = LongTermMemory(HashEmbedder(), store)
    written = first.remember("Quentin plays the bassoon", source="chat", tags=["music"], time="2024-05-05")
    again = LongTermMemory(HashEmbedder(), store)
    hits = again.query("bassoon", tags=["music"], source="chat", mode="bm25")
    assert [m.id for m in hits] == [written.id]
    assert not again.remember("Quentin plays the bassoon").created


def test_store_of_another_embedder_is_refused() -> None:
    store = InMemoryVectorStore()
    store.embedder_signature = "st:all-MiniLM-L6-v2:384"
    with pytest.raises(EmbedderMismatch, match="hash:64"):
        LongTermMemory(HashEmbedder(), store)


def test_batch_ingestion_embeds_once_per_text() -> None:
    emb = CountingEmbedder()
    ltm = LongTermMemory(emb, InMemoryVectorStore())
    ltm.remember_many([{"text": f"item {i}", "source": "bulk"} for i in range(50)])
    assert emb.texts == 50 and len(ltm.ids_by(source="bulk")) == 50


def test_it_is_a_memory_layer(ltm: LongTermMemory) -> None:
    assert isinstance(ltm, MemoryLayer) and ltm.name == "longterm"
    a = ltm.remember("first thing").id
    b = ltm.remember("second thing", time="2030-01-01 00:00:00", tags=["t"]).id
    assert isinstance(ltm.get(a), IndexRow) and ltm.get(b).tags == ("t",)
    assert ltm.forget(a) and len(ltm) == 1 and [m.id for m in ltm] == [b]
    assert ltm.stats()["count"] == 1


def test_every_layer_is_a_memory_layer_and_offers_no_more_than_callers_use(open_test_memory) -> None:
    """MemoryLayer declared store, remove, recall, recall_associated and consolidate, which only tests
    called: each layer's writes and searches are its own API, and the protocol holds what is shared."""
    memory = open_test_memory()
    layers = [memory.trace, memory.index, memory.semantic, memory.statistics]
    assert all(isinstance(layer, MemoryLayer) for layer in layers)
    gone = ("store", "recall_associated", "consolidate")
    assert [(layer.name, name) for layer in layers for name in gone if hasattr(layer, name)] == []
    assert not hasattr(memory.index, "recall") and not hasattr(memory.trace, "recall")


def test_time_parsing() -> None:
    assert time_key("2024-01-02")[0] == "2024-01-02 00:00:00"
    assert time_key("2024-01-02", end_of_day=True)[0] == "2024-01-02 23:59:59"
    assert time_key("knowledge_prior") == ("knowledge_prior", None)
    assert len(time_key(None)[0]) == 19


def test_given_vectors_skip_embedding_and_bad_shapes_are_refused() -> None:
    emb = CountingEmbedder()
    ltm = LongTermMemory(emb, InMemoryVectorStore())
    vecs = HashEmbedder().embed(["alpha beta", "gamma delta"])
    ltm.remember_many([{"text": "alpha beta"}, {"text": "gamma delta"}], vectors=vecs)
    assert emb.texts == 0 and ltm.query("gamma", mode="vector", limit=1)[0].text == "gamma delta"
    with pytest.raises(ValueError, match="rows of 64"):
        ltm.remember_many([{"text": "x"}], vectors=vecs)
    with pytest.raises(ValueError, match="rows of 64"):
        ltm.remember_many([{"text": "x"}], vectors=vecs[:1, :10])
    assert len(ltm) == 2


def test_the_names_of_everyone_heard_are_no_evidence_on_their_own(ltm: LongTermMemory) -> None:
    """The memory knows who spoke from its episodes' `who:` tags and tells BM25 (lexical.py)."""
    for who in ("Jon", "Gina", "Maria", "Tom"):
        for line in ("Agreed!", "Ha, yes.", "Totally.", "Yep!", "Same here.", "Oh nice."):
            ltm.remember(f"{who}: {line}", kind="episode", tags=[f"who:{who}"])
    rome = ltm.remember("Jon: Took a short trip last week to Rome, my favourite city.", kind="episode", tags=["who:Jon"])
    found = ltm.query("Which cities has Jon visited?", mode="bm25", limit=10)
    assert [m.id for m in found] == [rome.id]


@pytest.mark.parametrize("kept", [True, False])
def test_an_exact_search_ranks_every_row_by_its_cosine_read_in_parts(tmp_path, monkeypatch, kept: bool) -> None:
    """The exact search (taken when the store's answer is caught among copies of one text, or for a
    narrow filter) reads the rows' vectors SCORED_AT_ONCE at a time: across the parts it must give the
    brute-force order, copies of one text tied and in the order they were written."""
    monkeypatch.setattr(longterm, "SCORED_AT_ONCE", 7)
    ltm = LongTermMemory(HashEmbedder(), InMemoryVectorStore(), vectors=tmp_path / "vectors" if kept else None)
    texts = [f"note {n}: the {w} is by the {v}" for n, (w, v) in
             enumerate(zip(["boat", "lamp", "kettle", "bike", "chair"] * 5, ["dock", "desk", "stove", "gate", "door"] * 5, strict=True))]
    ids = [ltm.remember(t).id for t in texts]
    copies = [ltm.remember_many([{"text": "agent: ok", "id": f"ep-{d}"}])[0].id for d in range(3)]  # own ids: 3 rows
    q = ltm.embedder.embed(["where is the kettle"])[0]
    everything = ids + copies
    rows = dict(zip(everything, ltm.embedder.embed(texts + ["agent: ok"] * 3), strict=True))
    brute = sorted(everything, key=lambda i: -float(rows[i] @ q / np.linalg.norm(rows[i]) / np.linalg.norm(q)))
    got = ltm._exact(q, 12, None)
    assert [i for i, _ in got] == brute[:12]
    assert [i for i, _ in ltm._exact(q, 100, None) if i in copies] == copies
    some = ids[::3]  # a filter's rows, in the order written (tied scores keep it)
    assert [i for i, _ in ltm._exact(q, 5, some)] == [i for i in brute if i in some][:5]
    ltm.close()
