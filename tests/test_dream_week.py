"""A scripted week of episodes in a real trace consolidates offline into the expected facts."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from mettaclaw.llm import Scripted
from mettaclaw.memory.core.text import sentences
from mettaclaw.memory.core.text import term_set as terms
from mettaclaw.memory.dream import Dreamer, ExtractiveSummariser, LLMSummariser
from mettaclaw.memory.dream.episodes import DreamEpisode, from_trace
from mettaclaw.memory.episodes.trace import EpisodicTrace
from mettaclaw.memory.mirror import Mirror
from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore
from mettaclaw.parser import Command

START = datetime(2026, 3, 2, 8, 0, 0)
ONE_OFFS = ["The plumber fixed the leaking kitchen tap on Monday.", "A parcel with new headphones arrived.",
            "Grandma called to talk about her garden roses.", "The train to Leeds was cancelled this evening.",
            "We tried the new Thai restaurant downtown.", "The laptop battery died during the meeting.",
            "Tom lent me his ladder for the weekend."]


def week_trace(tmp_path) -> EpisodicTrace:
    trace = EpisodicTrace(tmp_path / "history.metta")
    for day in range(7):
        t = START + timedelta(days=day)
        stamp = lambda dt: dt.strftime("%Y-%m-%d %H:%M:%S")  # noqa: E731
        trace.append(stamp(t), "Alice drinks black coffee every morning before work.",
                     [Command("remember", ("Alice coffee routine",))])
        trace.append(stamp(t + timedelta(hours=2)), "Bob walks the dog in the park after lunch.",
                     [Command("send", ("enjoy the walk",))])
        trace.append(stamp(t + timedelta(hours=9)), ONE_OFFS[day], [])
    return trace


def memory(clock=lambda: 1_800_000_000.0) -> SemanticMemory:
    return SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), InMemorySemanticStore(), clock=clock)


def test_a_week_consolidates_into_the_recurring_facts(tmp_path):
    trace = week_trace(tmp_path)
    sem = memory()
    dreamer = Dreamer(sem, trace, sem.embedder, tmp_path / "dream" / "state.json", extract_concepts=False)
    report = dreamer.dream("test")
    facts = {r.content: r for r in sem if r.kind == "fact"}
    coffee = facts["Alice drinks black coffee every morning before work."]
    walk = facts["Bob walks the dog in the park after lunch."]
    episodes = {e.message: [] for e in trace}
    for e in trace:
        episodes[e.message].append(e.id)
    # each recurring fact cites exactly the seven episodes that said it (one DERIVED_FROM edge each)
    assert sorted(coffee.source_episodes) == sorted(episodes[coffee.content])
    assert sorted(walk.source_episodes) == sorted(episodes[walk.content])
    edges = {e.dst for e in sem.records.edges_of(coffee.id) if e.type == "DERIVED_FROM"}
    assert edges == set(episodes[coffee.content])
    # a one-off statement is never promoted to a fact on its own
    assert not any(one in facts for one in ONE_OFFS)
    assert report.episodes == 21 and report.error is None and report.finished_at is not None
    assert len(report.added) == len({r.id for r in sem if r.kind in ("fact", "summary")}) + len(
        {r.id for r in sem if r.category == "operational_pattern"})
    assert "remember -> success" in report.patterns_promoted and "send -> success" in report.patterns_promoted


def test_every_derived_record_shows_the_episodes_it_cites(tmp_path):
    trace = week_trace(tmp_path)
    sem = memory()
    Dreamer(sem, trace, sem.embedder, tmp_path / "s.json", extract_concepts=False).dream()
    texts = {e.id: from_trace(e).text for e in trace}
    for rec in sem:
        if rec.kind not in ("fact", "summary"):
            continue
        have = terms(rec.content)
        for ep in rec.source_episodes:
            assert any(terms(s) <= have for s in sentences(texts[ep])), (rec.content, texts[ep])


def test_dreaming_twice_changes_nothing_the_second_time(tmp_path):
    trace = week_trace(tmp_path)
    sem = memory()
    dreamer = Dreamer(sem, trace, sem.embedder, tmp_path / "s.json", extract_concepts=False)
    dreamer.dream()
    before = sorted((r.content, r.reinforcements, tuple(r.source_episodes)) for r in sem)
    again = dreamer.dream()
    assert again.episodes == 0 and again.counts() == {"added": 0, "reinforced": 0, "merged": 0, "superseded": 0,
                                                      "pruned": 0}
    assert sorted((r.content, r.reinforcements, tuple(r.source_episodes)) for r in sem) == before


def _cluster():
    return [DreamEpisode(f"ep-{i}", 1_800_000_000.0 + i, text) for i, text in enumerate(
        ["Alice moved to Paris in May.", "Alice loves her new flat in Paris.", "Bob sold his car."])]


def test_model_summary_keeps_only_correctly_cited_facts():
    llm = Scripted(["- Alice lives in Paris [1, 2]\n- Bob has no car [3]\n- Invented fact [9]\n- No citation here\n"
                    "commentary without a dash"])
    facts = LLMSummariser(llm).summarise(_cluster())
    assert [(f.content, f.episodes) for f in facts] == [("Alice lives in Paris", ("ep-0", "ep-1")),
                                                         ("Bob has no car", ("ep-2",))]
    assert "[1] Alice moved to Paris in May." in llm.prompts[0][1]


def test_a_failing_model_falls_back_to_the_extractive_summariser():
    cluster = _cluster()
    llm_facts = LLMSummariser(Scripted(["!error model down"])).summarise(cluster)
    assert [(f.content, f.episodes) for f in llm_facts] == [
        (f.content, f.episodes) for f in ExtractiveSummariser().summarise(cluster)]


@pytest.mark.slow
def test_a_week_on_the_real_stack(tmp_path):
    """MiniLM, embedded Chroma and SQLite: the same recurring facts with the same exact provenance."""
    from mettaclaw.memory.index.longterm import LongTermMemory
    from mettaclaw.memory.semantic.sqlite_store import SqliteSemanticStore
    from mettaclaw.memory.stores.chroma import ChromaVectorStore
    from mettaclaw.memory.stores.embedders import SentenceTransformerEmbedder, signature

    embedder = SentenceTransformerEmbedder()
    trace = week_trace(tmp_path)
    vectors = ChromaVectorStore.embedded(tmp_path / "chroma", embedder_signature=signature(embedder), collection="semantic")
    sem = SemanticMemory(embedder, vectors, SqliteSemanticStore(tmp_path / "semantic.sqlite3"))
    longterm = LongTermMemory(embedder, InMemoryVectorStore())
    try:
        report = Dreamer(sem, trace, embedder, tmp_path / "s.json", after_writes=Mirror(longterm, sem).sync).dream()
        facts = {r.content: sorted(r.source_episodes) for r in sem if r.kind == "fact"}
        said = {}
        for e in trace:
            said.setdefault(e.message, []).append(e.id)
        for text in ("Alice drinks black coffee every morning before work.", "Bob walks the dog in the park after lunch."):
            assert facts[text] == sorted(said[text])
        assert report.error is None and report.patterns_promoted
        assert longterm.query("when does Alice drink coffee", limit=1)[0].kind == "derived"
    finally:
        sem.close()


def test_clustering_on_words_finds_the_same_recurring_facts(tmp_path):
    trace = week_trace(tmp_path)
    sem = memory()
    Dreamer(sem, trace, sem.embedder, tmp_path / "s.json", extract_concepts=False, cluster_on="words").dream()
    facts = {r.content: len(r.source_episodes) for r in sem if r.kind == "fact"}
    assert facts["Alice drinks black coffee every morning before work."] == 7
    assert facts["Bob walks the dog in the park after lunch."] == 7
    with pytest.raises(ValueError, match="cluster_on"):
        Dreamer(sem, trace, sem.embedder, tmp_path / "s.json", cluster_on="vibes")


def test_a_greeting_asked_every_day_is_no_fact():
    """Five content words, said the same way each morning: a question asserts nothing, so it is neither
    a fact nor part of a summary (it was a fact citing every morning it was asked)."""
    greeting = "Good morning everyone, how are you doing today?"
    cluster = [DreamEpisode(f"ep-{i}", 1_800_000_000.0 + i, greeting, meta={"who": "ana"}) for i in range(30)]
    cluster.append(DreamEpisode("ep-30", 1_800_000_030.0, "The morning train to Leeds was cancelled today.",
                                meta={"who": "ana"}))
    assert ExtractiveSummariser().summarise(cluster) == []


def test_a_fact_said_in_a_turn_of_several_speakers_names_only_the_one_who_said_it():
    """A channel turn in which alice and bob both spoke: each line names its own speaker, and a fact
    lifted from it said "alice, bob: bob: My cat Felix likes tuna fish", putting bob's words in alice's
    mouth as well."""
    text = "alice: The garden hose is broken again\nbob: My cat Felix likes tuna fish a lot"
    cluster = [DreamEpisode(f"ep-{i}", 1_800_000_000.0 + i, text, meta={"who": "alice, bob"}) for i in range(3)]
    facts = {f.content for f in ExtractiveSummariser().summarise(cluster, frozenset({"alice", "bob"}))}
    assert facts == {"alice: The garden hose is broken again", "bob: My cat Felix likes tuna fish a lot"}
