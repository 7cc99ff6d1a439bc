"""Recall as a declared list of stages (RecallSettings.stages): each one switched off changes what it
does and nothing else breaks; the names are checked."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mettaclaw.memory.core.settings import STAGES, RecallSettings
from mettaclaw.messages import Message


def without(*names: str) -> RecallSettings:
    return RecallSettings(stages=tuple(n for n in STAGES if n not in names))


def chat(memory, said: list[tuple[str, str]]) -> list[str]:
    """Each (who, text) one turn of a channel, a day apart; their episode ids."""
    return [memory.record_turn(f"2026-01-{n + 1:02d} 10:00:00", [Message(text, who, "chat")], []).episode_ids[0]
            for n, (who, text) in enumerate(said)]


def painters(memory) -> tuple[str, str]:
    """Alice's theme of what she painted, and Bob's record that says "painted" more often and names her."""
    mine = memory.semantic.learn("Alice: I did a watercolour of the lake at sunrise. Alice: I painted my dog Luna.",
                                 kind="summary", source_episodes=["ep-1", "ep-2"]).id
    theirs = memory.semantic.learn("Bob: Wow Alice, you painted that? Alice has painted so much! I painted a fence.",
                                   kind="summary", source_episodes=["ep-3"]).id
    memory.sync_mirror()
    return mine, theirs


def test_the_stage_names_are_checked_and_a_command_line_can_give_them() -> None:
    assert RecallSettings().stages == STAGES
    assert RecallSettings(stages="candidates, fuse,floor").stages == ("candidates", "fuse", "floor")
    assert RecallSettings(stages="-spread,-revisions").stages == tuple(s for s in STAGES if s not in ("spread", "revisions"))
    with pytest.raises(ValidationError, match="unknown recall stage 'speaker'; the stages are candidates, fuse, "):
        RecallSettings(stages="candidates,speaker")
    with pytest.raises(ValidationError, match="unknown recall stage 'nothing'"):
        RecallSettings(stages="-nothing")
    with pytest.raises(ValidationError, match="in this order"):
        RecallSettings(stages=("fuse", "candidates"))
    with pytest.raises(ValidationError, match="in this order"):
        RecallSettings(stages=("candidates", "candidates"))
    with pytest.raises(ValidationError, match="not both"):
        RecallSettings(stages="candidates,-spread")


def test_without_candidates_or_the_floor(open_test_memory) -> None:
    memory = open_test_memory(dream=False, settings=without("candidates"))
    chat(memory, [("Ann", "The printer on floor two broke again.")])
    assert memory.query("printer", 5) == []  # nothing is found
    unfloored = open_test_memory(dream=False, settings=without("floor"), folder="unfloored")
    chat(unfloored, [("Ann", "The printer on floor two broke again."), ("Ann", "Emma is allergic to peanuts.")])
    assert memory.query("quantum chromodynamics lattice", 5) == []
    assert unfloored.query("quantum chromodynamics lattice", 5)  # the nearest, however far


def test_without_fusion_every_score_is_naught_and_nothing_spreads(open_test_memory) -> None:
    memory = open_test_memory(dream=False, settings=without("fuse"))
    chat(memory, [("Ann", "The printer on floor two broke again."), ("Ann", "It jammed on page three."),
                  ("Ann", "Did the printer get fixed?")])
    hits = memory.query("printer", 5, explain=True)
    assert hits and all(h.score == 0.0 and h.parts["spread"] == 0.0 for h in hits)
    assert not any(name.endswith("_rank") for h in hits for name in h.parts)


def test_without_sentences_neither_their_ranking_nor_the_askers(open_test_memory) -> None:
    said = [("alice", "My wifi password is sunflower77."), ("bob", "My wifi password is pinecone-42.")]
    memory = open_test_memory(dream=False)
    chat(memory, said)
    hits = memory.query("what is my wifi password", 5, explain=True, asker="alice")
    assert "sentences_rank" in hits[0].parts and "asker_rank" in hits[0].parts
    plain = open_test_memory(dream=False, settings=without("sentences"), folder="plain")
    chat(plain, said)
    hits = plain.query("what is my wifi password", 5, explain=True, asker="alice")
    assert hits and not {"sentences_rank", "asker_rank"} & {n for h in hits for n in h.parts}  # the asker's reads sentences


def test_without_the_asker_a_question_about_oneself_is_anyones(open_test_memory) -> None:
    said = [("alice", "My wifi password is sunflower77."), ("bob", "Our wifi password is pinecone-42, wifi password.")]
    order = {}
    for name, settings in (("all", RecallSettings()), ("no asker", without("asker"))):
        memory = open_test_memory(dream=False, settings=settings, folder=name.replace(" ", "-"))
        chat(memory, said)
        hits = memory.query("what is my wifi password", 5, explain=True, asker="alice")
        order[name] = [h.text for h in hits]
        assert ("asker_rank" in hits[0].parts) == (name == "all")
    assert order["all"][0].startswith("alice:") and order["no asker"][0].startswith("bob:")


def test_without_speakers_the_other_persons_words_win(open_test_memory) -> None:
    for settings, first in ((RecallSettings(), 0), (without("speakers"), 1)):
        memory = open_test_memory(dream=False, settings=settings, folder=str(first))
        ids = painters(memory)
        hits = memory.query("What has Alice painted?", 10, explain=True)
        assert [h.id for h in hits if h.id in ids][0] == ids[first]
        assert any("speaker_rank" in h.parts for h in hits) == (first == 0)


def test_without_the_semantic_ranking_it_adds_no_rank(open_test_memory) -> None:
    for settings, ranked in ((RecallSettings(semantic=0.5), True),
                             (RecallSettings(semantic=0.5, stages=tuple(s for s in STAGES if s != "semantic")), False)):
        memory = open_test_memory(dream=False, settings=settings, folder=str(ranked))
        fact = memory.semantic.learn("Alice lives in Paris in a flat with a balcony.").id
        memory.sync_mirror()
        hit = next(h for h in memory.query("where does Alice live, Paris flat", 5, explain=True) if h.id == fact)
        assert ("semantic_rank" in hit.parts) == ranked


def test_without_spreading_no_hit_gains_from_its_links(open_test_memory) -> None:
    said = [("Ann", "The printer on floor two broke again."), ("Ann", "Printer or not, it jammed on page three.")]
    spread = open_test_memory(dream=False)
    chat(spread, said)
    assert any(h.parts["spread"] > 0 for h in spread.query("printer", 5, explain=True))  # neighbours support each other
    alone = open_test_memory(dream=False, settings=without("spread"), folder="alone")
    chat(alone, said)
    hits = alone.query("printer", 5, explain=True)
    assert hits and all(h.parts["spread"] == 0 for h in hits)


def test_without_dedup_pointers_and_repeats_are_shown(open_test_memory) -> None:
    for settings, deduped in ((RecallSettings(), True), (without("dedup"), False)):
        memory = open_test_memory(dream=False, settings=settings, folder=str(deduped))
        eps = chat(memory, [("Ann", "pottery class number 1 was fun."), ("Ann", "pottery class number 2 was fun.")])
        memory.remember("pottery class number 1 was fun.")  # the same statement, kept as a memory
        concept = memory.semantic.learn("pottery", name="pottery", kind="concept", source_episodes=eps).id
        memory.sync_mirror()
        hits = memory.query("pottery class", 10)
        assert (concept in {h.id for h in hits}) != deduped  # a concept points at its episodes
        texts = [h.text.removeprefix("Ann: ") for h in hits]
        assert (texts.count("pottery class number 1 was fun.") == 1) == deduped


def test_without_revisions_the_earlier_statement_stays_first(open_test_memory) -> None:
    said = [("Sam", "The wifi password at the cabin is pinecone-42."),
            ("Sam", "Ok. The wifi password changed, it is now cedar-77.")]
    for settings, revised in ((RecallSettings(), True), (without("revisions"), False)):
        memory = open_test_memory(dream=False, settings=settings, folder=str(revised))
        old, new = chat(memory, said)
        shown = [h.id for h in memory.query("what is the wifi password at the cabin", 5)]
        assert shown.index(new) < shown.index(old) if revised else shown.index(old) < shown.index(new)


def test_a_changed_value_comes_before_the_old_one_and_before_the_record_that_gathers_it(open_test_memory) -> None:
    """"has improved to 78%" revises "has reached 65%": words of a changed value revise, and a dream
    record gathering the old value among other statements (a theme of many, shown first with the old
    value in it) is revised too."""
    said = [("dana", "My test coverage on the API module has reached 65% so far."),
            ("dana", "The API module calls the weather service."), ("dana", "I write the tests for my API module in pytest."),
            ("dana", "My API module caches responses for ten minutes."), ("ann", "the canteen has soup today"),
            ("dana", "On my API module the test coverage has improved to 78%.")]
    for settings, revised in ((RecallSettings(), True), (without("revisions"), False)):
        memory = open_test_memory(dream=False, settings=settings, folder=str(revised))
        ids = chat(memory, said)
        theme = "dana: " + " ".join(text for _, text in said[:4])
        record = memory.semantic.learn(theme, kind="summary", source_episodes=ids[:4], valid_from="2026-01-04 10:00:00").id
        memory.sync_mirror()
        shown = [h.id for h in memory.query("what is the test coverage of my API module", 5)]
        assert record in shown and ids[-1] in shown
        assert (shown.index(ids[-1]) < shown.index(record)) == revised


def test_every_stage_alone_and_every_one_left_out_runs(open_test_memory) -> None:
    """Any selection of stages (in their order) answers without an error, in every layer."""
    memory = open_test_memory(dream=False)
    chat(memory, [("alice", "I moved to Paris last spring."), ("bob", "Wow alice, you painted that?")])
    painters(memory)
    for stages in [(s,) for s in STAGES] + [tuple(n for n in STAGES if n != s) for s in STAGES]:
        memory.pipeline.settings = RecallSettings(stages=stages)
        for layer in (None, "episodic", "semantic"):
            memory.query("what has alice painted in my flat", 5, layer=layer, explain=True, asker="alice")


def test_the_floor_keeps_the_order_found_so_equal_scores_show_alike_run_after_run() -> None:
    """The candidates passing the floor were kept in the order of a set of their keys, which Python
    orders by a hash that changes from one process to the next: hits of one score came in another
    order each run."""
    from mettaclaw.memory.core.text import query_terms
    from mettaclaw.memory.index.longterm import LongTermMemory
    from mettaclaw.memory.recall import RecallPipeline
    from mettaclaw.memory.recall.candidates import Candidates
    from mettaclaw.memory.recall.pipeline import Query, hold_to_floor
    from mettaclaw.memory.recall.relevance import query_vector
    from mettaclaw.memory.stores.embedders import HashEmbedder
    from mettaclaw.memory.stores.vectors import InMemoryVectorStore

    index = LongTermMemory(HashEmbedder(), InMemoryVectorStore())
    rows = [index.remember(f"tea number {n} was fine").id for n in range(20)]
    pipeline = RecallPipeline(index)
    q = Query("tea", 10, vector=query_vector(index, "tea"), wanted=frozenset(query_terms("tea")), known=frozenset(),
              index=index, settings=pipeline.settings, floor=pipeline.floor, stages=STAGES, graph=pipeline.graph)
    cands = Candidates(index)
    cands.rank("bm25", [c.key for r in rows if (c := cands.row(r)) is not None])
    assert list(hold_to_floor(cands, q).contending) == rows  # every one holds the query's word
    assert [c.key for c in cands.best()] == rows  # one score each (none fused): the order found


def test_a_question_about_what_the_other_said_is_not_about_the_asker(open_test_memory) -> None:
    """"How did you recommend ... my ..." asks for the other's words: the asker's own lines are not
    lifted for it, as they are for a question about the asker's own things."""
    said = [("dana", "My resume needs the keywords project management and budget oversight."),
            ("helper", "I recommended weaving the keywords into your summary and each job's bullet points.")]
    memory = open_test_memory(dream=False)
    chat(memory, said)
    about_me = memory.query("what keywords does my resume need", 5, explain=True, asker="dana")
    assert "asker_rank" in about_me[0].parts
    hits = memory.query("how did you recommend weaving the keywords into my resume", 5, explain=True, asker="dana")
    assert not any("asker_rank" in h.parts for h in hits)
    assert hits[0].text.startswith("helper:")
