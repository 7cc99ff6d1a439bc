"""The incremental BM25 index: same scores as bm25s, correct under adds and removes, lazy rebuilds."""

from __future__ import annotations

import random
import threading

import pytest

from mettaclaw.memory.core.text import stem
from mettaclaw.memory.core.text import terms as tokenize
from mettaclaw.memory.stores.lexical import COMMON_MIN_DOCS, BM25Index

WORDS = ["apple", "banana", "cherry", "dragon", "eagle", "falcon", "garden", "harbor", "island", "jungle", "kettle", "lemon", "mango"]


def _docs(n: int, seed: int = 7) -> dict[str, str]:
    rng = random.Random(seed)
    return {f"d{i}": " ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for i in range(n)}


def test_delta_scoring_matches_a_built_bm25s_index() -> None:
    docs = _docs(200)
    delta_only = BM25Index(min_rebuild=10_000)  # never rebuilds: every document is scored as delta
    built = BM25Index()
    for doc_id, text in docs.items():
        delta_only.add(doc_id, text)
        built.add(doc_id, text)
    built.rebuild()
    for query in ("apple dragon", "kettle kettle lemon", "harbor"):
        a = dict(delta_only.search(query, 500))
        b = dict(built.search(query, 500))
        assert a.keys() == b.keys()
        assert all(abs(a[k] - b[k]) < 1e-4 * max(1.0, b[k]) for k in a)
    assert delta_only.rebuilds == 0


def test_adds_and_removes_stay_correct_between_rebuilds() -> None:
    index = BM25Index(min_rebuild=50, rebuild_share=0.1)
    docs = _docs(300)
    for doc_id, text in docs.items():
        index.add(doc_id, text)
    index.search("apple", 5)  # first search folds everything into the built part
    assert index.rebuilds == 1
    index.add("new", "zeppelin apple")
    index.remove("d3")
    index.add("d4", "zeppelin only")  # replacing a built document
    hits = dict(index.search("zeppelin", 10))
    assert set(hits) == {"new", "d4"}
    assert "d3" not in dict(index.search(docs["d3"], 300))
    assert "d4" not in dict(index.search(" ".join(w for w in WORDS if w != "zeppelin"), 300)), "old text forgotten"
    assert index.rebuilds == 1, "a handful of writes must not rebuild"
    for i in range(60):
        index.add(f"x{i}", "yacht")
    assert len(index.search("yacht", 100)) == 60 and index.rebuilds == 2, "a large delta is folded in lazily"
    assert len(index) == 300 + 1 + 60 - 1


def test_filter_restricts_both_parts() -> None:
    index = BM25Index(min_rebuild=1)
    index.add("a", "red kettle")
    index.add("b", "red kettle")
    index.rebuild()
    index.add("c", "red kettle")
    assert {i for i, _ in index.search("kettle", 10, allowed={"b", "c"})} == {"b", "c"}
    assert index.search("kettle", 10, allowed=set()) == []


@pytest.mark.parametrize(("word", "root"), [("paintings", "painting"), ("painted", "paint"), ("running", "run"),
                                            ("stories", "story"), ("class", "class"), ("cats", "cat"),
                                            ("hiking", "hike"), ("loved", "loves"), ("shared", "share"),
                                            ("families", "family"), ("replies", "reply"), ("supplied", "supply")])
def test_a_word_and_its_forms_share_a_stem(word: str, root: str) -> None:
    assert stem(word) == stem(root)


@pytest.mark.parametrize(("one", "other"), [("sally", "sale"), ("james", "jam"), ("jones", "jon"), ("times", "tim"),
                                            ("news", "new"), ("early", "ear"), ("reply", "rep"), ("notes", "not")])
def test_unrelated_words_and_names_keep_apart(one: str, other: str) -> None:
    """What the hand-written suffix rules this stemmer replaced joined (see `text.stem`)."""
    assert stem(one) != stem(other)


def test_a_question_finds_another_form_of_its_word_and_not_a_name_that_looks_like_a_word() -> None:
    index = BM25Index()
    index.add("reunion", "Three families came to the reunion at the lake.")
    index.add("sally", "Sally called about the car again.")
    index.add("sale", "The garden centre has a sale on roses.")
    index.add("other", "The bus was late this morning.")
    assert [i for i, _ in index.search("which family came", 10)] == ["reunion"]
    assert [i for i, _ in index.search("when is the sale", 10)] == ["sale"]


@pytest.mark.parametrize("built", [False, True])
def test_a_questions_frame_is_not_what_it_asks_about(built: bool) -> None:
    index = BM25Index()
    index.add("words", "Your kind words mean a lot to me.")
    index.add("told", "I told you the printer broke again.")
    index.add("art", "Caroline paints bright landscapes for the art show.")
    index.add("emma", "Emma works at the bakery on Main Street.")
    if built:
        index.rebuild()
    assert [i for i, _ in index.search("What kind of art does Caroline make?", 10)] == ["art"]
    assert [i for i, _ in index.search("Tell me about Emma", 10)] == ["emma"]
    assert [i for i, _ in index.search("Do you remember what type of bread Emma bakes?", 10)] == ["emma"]
    assert [i for i, _ in index.search("who said kind words", 10)] == ["words"]  # a kind word stays a word


def test_tokenize_drops_stopwords_and_possessives() -> None:
    assert tokenize("What is Caroline's favourite book?") == [stem("caroline"), stem("favourite"), "book"]


def test_bulk_load_replaces_the_index() -> None:
    index = BM25Index()
    index.add("old", "kettle")
    index.load([("a", "red kettle"), ("b", "blue teapot")])
    assert [i for i, _ in index.search("kettle", 5)] == ["a"] and len(index) == 2 and "old" not in index


def test_a_saved_index_restores_built_so_the_first_search_after_a_restart_rebuilds_nothing(tmp_path) -> None:
    docs = _docs(600)
    index = BM25Index()
    index.add_many(docs.items())  # all in the delta: no search has folded it yet
    index.save(tmp_path / "bm25")
    restored = BM25Index.restore(tmp_path / "bm25", tokens_of=lambda ids: {i: tokenize(docs[i]) for i in ids})
    before = restored.rebuilds
    assert restored.search("apple dragon", 50) == index.search("apple dragon", 50)
    assert restored.rebuilds == before, "the big delta was folded at save, not at the first search"
    assert len(restored) == 600


def _blocked_builds(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Background builds wait for the returned event: a test can write while one runs."""
    go = threading.Event()
    built = BM25Index._built

    def slow(self: BM25Index, build):  # noqa: ANN001, ANN202
        assert go.wait(10), "the test never let the build finish"
        return built(self, build)

    monkeypatch.setattr(BM25Index, "_built", slow)
    return go


def test_a_big_index_rebuilds_in_the_background_and_keeps_what_is_written_meanwhile(monkeypatch) -> None:
    docs = _docs(300)
    index = BM25Index(min_rebuild=50, background_from=100)
    index.add_many(docs.items())
    go = _blocked_builds(monkeypatch)
    hits = dict(index.search("apple dragon", 300))  # starts the build and answers from the delta
    assert index.rebuilds == 0 and index._build is not None, "the search waited for the rebuild"
    assert set(hits) == {d for d, text in docs.items() if {"apple", "dragon"} & set(text.split())}
    index.add("new", "zeppelin apple")  # written while the build runs
    index.add("d4", "zeppelin only")  # a document of the build's corpus, replaced
    index.remove("d3")  # and one removed
    assert set(dict(index.search("zeppelin", 10))) == {"new", "d4"}
    go.set()
    index.wait()
    assert index.rebuilds == 1 and index._build is None
    final = {**docs, "new": "zeppelin apple", "d4": "zeppelin only"}
    del final["d3"]
    fresh = BM25Index()
    fresh.add_many(final.items())
    fresh.rebuild()
    for query in ("zeppelin", "apple dragon", docs["d3"], docs["d4"]):
        assert set(dict(index.search(query, 400))) == set(dict(fresh.search(query, 400))), query
    assert len(index) == len(final) and "d3" not in index
    index.rebuild()  # folded again: the same scores as an index built from scratch
    a, b = dict(index.search("apple kettle", 400)), dict(fresh.search("apple kettle", 400))
    assert a.keys() == b.keys() and all(abs(a[k] - b[k]) < 1e-4 * max(1.0, b[k]) for k in a)


def test_a_small_index_rebuilds_inline() -> None:
    index = BM25Index(min_rebuild=50)  # background_from 20,000 by default
    index.add_many(_docs(300).items())
    index.search("apple", 5)
    assert index.rebuilds == 1 and index._build is None


def test_a_failed_background_rebuild_is_reported_once_and_loses_nothing(monkeypatch) -> None:
    docs = _docs(300)
    index = BM25Index(min_rebuild=50, background_from=100)
    index.add_many(docs.items())

    def broken(self: BM25Index, build):  # noqa: ANN001, ANN202
        raise MemoryError("no room for the new index")

    monkeypatch.setattr(BM25Index, "_built", broken)
    before = index.search("apple dragon", 300)
    index._build.done.wait(10)
    with pytest.raises(RuntimeError, match="BM25 rebuild failed: no room"):
        index.search("apple dragon", 300)
    monkeypatch.undo()
    assert index.search("apple dragon", 300) == before and len(index) == 300  # the next search retries
    index.wait()
    assert index.rebuilds == 1 and set(dict(index.search("apple dragon", 300))) == set(dict(before))


def test_saving_waits_for_a_running_rebuild(monkeypatch, tmp_path) -> None:
    docs = _docs(300)
    index = BM25Index(min_rebuild=50, background_from=100)
    index.add_many(docs.items())
    go = _blocked_builds(monkeypatch)
    index.search("apple", 5)
    index.add("late", "zeppelin")
    threading.Timer(0.2, go.set).start()
    index.save(tmp_path / "bm25")
    monkeypatch.undo()
    texts = {**docs, "late": "zeppelin"}
    restored = BM25Index.restore(tmp_path / "bm25", tokens_of=lambda ids: {i: tokenize(texts[i]) for i in ids})
    assert len(restored) == 301 and [i for i, _ in restored.search("zeppelin", 5)] == ["late"]


@pytest.mark.parametrize("built", [False, True])
def test_a_document_matching_only_terms_in_most_documents_is_not_ranked(built: bool) -> None:
    """Every chat turn carries its speaker's name: "which cities has Jon visited?" must rank the turn
    about Rome, not the shortest turns that merely say "Jon"."""
    index = BM25Index(min_rebuild=10_000 if not built else 1)
    chatter = ["Agreed!", "Thanks for having my back.", "Ha, yes.", "Let's keep going.", "Sounds good to me.",
               "Wow.", "Totally.", "Catch you later!", "Good luck with that.", "Same here.", "Oh nice.", "Yep!"]
    for n, line in enumerate(chatter):
        index.add(f"short{n}", f"Jon: {line}")
    index.add("rome", "Jon: Still busy with the studio. Took a short trip last week to Rome to clear my mind.")
    index.add("paris", "Gina: Paris? Never visited it, but the city looks lovely.")
    if built:
        index.rebuild()
        index.add("delta", "Jon: Agreed, see you soon.")  # the rule holds in the delta too
    assert {doc for doc, _ in index.search("Which cities has Jon visited in Rome?", 10)} == {"rome", "paris"}
    assert [doc for doc, _ in index.search("Jon Rome", 10)] == ["rome"]
    # every term in most documents: nothing is more telling than the rest, so all of them rank
    assert len(index.search("Jon", 50)) == len(chatter) + 1 + built
    # a term no document holds is telling too: matching the name alone is still no evidence
    assert index.search("Jon zeppelin", 10) == []


def test_in_a_small_memory_every_term_is_evidence() -> None:
    """A user's first memories: a word they all share still finds them (no term is common below
    COMMON_MIN_DOCS documents)."""
    index = BM25Index()
    for n in range(COMMON_MIN_DOCS - 1):
        index.add(f"k{n}", f"the kettle number {n} is in the attic")
    assert len(index.search("red kettle garage", 50)) == COMMON_MIN_DOCS - 1
    index.add("k-last", "the last kettle is in the attic")
    assert index.search("red kettle garage", 50) == [], "from COMMON_MIN_DOCS on, 'kettle' is in every one"


def test_a_name_is_no_evidence_however_few_documents_hold_it() -> None:
    """Four people in one memory: "jon" is in a quarter of the turns, not most of them, yet a turn
    that only carries his name is still no answer to a question about him."""
    index = BM25Index()
    chatter = ["Agreed!", "Ha, yes.", "Totally.", "Yep!", "Same here.", "Oh nice."]
    for who in ("Jon", "Gina", "Maria", "Tom"):
        for n, line in enumerate(chatter):
            index.add(f"{who}{n}", f"{who}: {line}")
    index.add("rome", "Jon: Last week I visited Rome, my favourite city.")
    index.add("lisbon", "Maria: The city I visited in spring was Lisbon.")
    question = "Which cities has Jon visited?"
    assert {doc for doc, _ in index.search(question, 5)} & {f"Jon{n}" for n in range(len(chatter))}, \
        "without the names, the shortest of Jon's turns rank"
    ranked = [doc for doc, _ in index.search(question, 10, names=frozenset({"jon", "gina", "maria", "tom"}))]
    assert ranked[0] == "rome" and set(ranked) == {"rome", "lisbon"}  # the name still counts in the score
    assert len(index.search("Jon", 50, names=frozenset({"jon"}))) == len(chatter) + 1  # a name alone: all rank


def test_han_and_kana_are_read_as_character_pairs() -> None:
    """A Chinese or Japanese clause was one "word", so a word inside it ("绿茶") found nothing."""
    assert tokenize("我喜欢喝绿茶和乌龙茶").count("绿茶") == 1
    assert "東京" in tokenize("東京に住んでいます") and tokenize("茶") == ["茶"]
    assert tokenize("Alice123日本語 café") == ["alice123", "日本", "本語", "café"]
    assert tokenize("한국어 텍스트") == ["한국어", "텍스트"]  # Korean is written with spaces: words stay


@pytest.mark.parametrize("built", [False, True])
def test_a_text_is_scored_as_the_search_would_score_it_as_one_of_the_documents(built: bool) -> None:
    """`score_texts` is what recall scores a long row's passages with: the index's own statistics,
    so a text that is a document scores exactly what `search` gave it."""
    docs = _docs(120)
    index = BM25Index(min_rebuild=10_000)
    for doc_id, text in docs.items():
        index.add(doc_id, text)
    if built:
        index.rebuild()
    for query in ("apple dragon", "kettle lemon mango", "harbor"):
        found = dict(index.search(query, k=len(docs)))
        scored = index.score_texts(query, [docs[d] for d in found])
        assert scored == pytest.approx(list(found.values()), rel=1e-5)
    assert index.score_texts("zebra", ["apple banana"]) == [0.0]  # a word no document holds counts nothing
    assert index.score_texts("", ["apple"]) == [0.0]
