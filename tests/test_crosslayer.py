"""Spreading activation across layers, grouped by layer, and the agent's recall with its score parts."""

from __future__ import annotations

import pytest

from mettaclaw.memory.embedders import HashEmbedder
from mettaclaw.memory.longterm import LongTermMemory
from mettaclaw.memory.recall import AgentRecall, LayerGraph, spread_layers
from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
from mettaclaw.memory.vectors import InMemoryVectorStore

T0 = 1_800_000_000.0


def semantic() -> SemanticMemory:
    return SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), InMemorySemanticStore(), clock=lambda: T0)


def test_spread_matches_the_spec_arithmetic_on_a_chain():
    links = {("semantic", "a"): [("episodic", "e1", 1.0)], ("episodic", "e1"): [("semantic", "a", 1.0)]}
    found = spread_layers(lambda layer, node: links.get((layer, node), []), {("semantic", "a"): 1.0}, steps=1)
    # one step: a keeps 0.5 and passes 0.5 to e1; everything decays by 0.1
    assert found == {"episodic": [("e1", pytest.approx(0.45))]}


def test_spread_crosses_layers_and_groups_results_by_layer():
    sem = semantic()
    coffee = sem.learn("Alice drinks coffee every morning.", source_episodes=["ep-1", "ep-2"]).id
    mug = sem.learn("The blue mug is Alice's favourite.", source_episodes=["ep-2"]).id
    tea = sem.learn("Tea is kept in the tin.", source_episodes=["ep-9"]).id
    graph = LayerGraph(sem, adjacent=lambda ep: {"ep-1": ["ep-0"]}.get(ep, []))
    grouped = spread_layers(graph, {("semantic", coffee): 1.0})
    assert set(grouped) == {"semantic", "episodic"}
    episodic = dict(grouped["episodic"])
    assert {"ep-1", "ep-2", "ep-0"} <= set(episodic) and episodic["ep-1"] > episodic["ep-0"]
    semantic_ids = [node for node, _ in grouped["semantic"]]
    assert mug in semantic_ids and tea not in semantic_ids  # reached through the shared episode only
    assert all(a >= b for (_, a), (_, b) in zip(grouped["episodic"], grouped["episodic"][1:], strict=False))


def test_agent_recall_fuses_layers_drops_covered_hits_and_explains_scores():
    sem = semantic()
    longterm = LongTermMemory(HashEmbedder(256), InMemoryVectorStore())
    turns = {"ep-1": "Alice: I moved to Paris last spring.", "ep-2": "Alice: my new flat in Paris has a balcony.",
             "ep-3": "Bob: I sold my old car."}
    ids = {ep: longterm.remember(text, extra={"episode": ep}).id for ep, text in turns.items()}
    fact = sem.learn("Alice lives in Paris in a flat with a balcony.", source_episodes=["ep-1", "ep-2"]).id
    episode_of = {mid: ep for ep, mid in ids.items()}
    graph = LayerGraph(sem, longterm=longterm, episode_of=episode_of.get,
                       memories_of=lambda ep: [ids[ep]] if ep in ids else [])
    recall = AgentRecall(longterm, sem, graph, touch=False)
    hits = recall.recall("where does Alice live, Paris flat", limit=5, explain=True)
    by_id = {h.id: h for h in hits}
    assert fact in by_id and by_id[fact].cites == ["ep-1", "ep-2"]
    parts = by_id[fact].parts
    for name in ("similarity", "base_level", "spreading", "retrievability", "layer_rank", "score"):
        assert name in parts
    # a turn whose only episode is already covered by a better hit is not shown again
    seen: set[str] = set()
    for hit in hits:
        assert not (hit.cites and set(hit.cites) <= seen), hit
        seen |= set(hit.cites)
    assert seen >= {"ep-1", "ep-2"}
    grouped = recall.by_layer(hits)
    assert set(grouped) <= {"semantic", "longterm"} and sum(len(v) for v in grouped.values()) == len(hits)
    assert all(h.parts is None for h in recall.recall("Alice Paris", limit=3))


def test_agent_recall_refuses_bad_input():
    with pytest.raises(ValueError, match="at least one layer"):
        AgentRecall()
    recall = AgentRecall(semantic=semantic())
    with pytest.raises(ValueError, match="empty query"):
        recall.recall("   ")
    with pytest.raises(ValueError, match="limit"):
        recall.recall("x", limit=0)


def test_spread_skill_groups_by_layer_and_reports_bad_references():
    from mettaclaw.memory.recall import render, spread_skill

    sem = semantic()
    fact = sem.learn("Alice drinks coffee every morning.", source_episodes=["ep-1"]).id
    sem.learn("The blue mug is Alice's favourite.", source_episodes=["ep-1"])
    out = spread_skill(sem, LayerGraph(sem), fact)
    assert out.startswith(f"SPREAD from {fact}") and "  episodic: ep-1" in out and "  semantic: " in out
    assert spread_skill(sem, LayerGraph(sem), "no such thing").startswith("ERROR: spread: no record")
    assert spread_skill(sem, LayerGraph(sem), " ").startswith("ERROR: spread: give a record")
    hits = AgentRecall(semantic=sem, touch=False).recall("coffee", limit=2, explain=True)
    text = render(hits, explain=True)
    assert text.startswith("1. [semantic] ") and "retrievability=" in text and "from ep-1" in text


def test_a_concept_points_at_its_episodes_but_never_hides_them():
    sem = semantic()
    longterm = LongTermMemory(HashEmbedder(256), InMemoryVectorStore())
    ids = {ep: longterm.remember(f"Alice: pottery class number {n} was fun.").id for n, ep in enumerate(["e1", "e2"])}
    concept = sem.learn("pottery", name="pottery", kind="concept", source_episodes=["e1", "e2"]).id
    episode_of = {mid: ep for ep, mid in ids.items()}
    graph = LayerGraph(sem, longterm=longterm, episode_of=episode_of.get)
    hits = AgentRecall(longterm, sem, graph, touch=False, pointers=True).recall("pottery", limit=5)
    assert concept in {h.id for h in hits}
    assert {h.id for h in hits} >= set(ids.values())  # the turns themselves are still shown
    assert next(h for h in hits if h.id == concept).covers == []
    default = AgentRecall(longterm, sem, graph, touch=False).recall("pottery", limit=5)
    assert {h.id for h in default} == set(ids.values())  # by default a concept is a hub, not a result


def test_feedback_reaches_a_second_hop_that_shares_no_word_with_the_question():
    longterm = LongTermMemory(HashEmbedder(256), InMemoryVectorStore())
    longterm.remember("Alice: I grew up in Uppsala before moving here.")
    second = longterm.remember("Bob: Uppsala has a huge cathedral and snowy winters.").id
    for n in range(120):
        longterm.remember(f"Carol: note {n} about gardening plot {n} and tomato row {n}.")
    question = "What was Alice's childhood town like?"

    def ids(feedback: int) -> list[str]:
        recall = AgentRecall(longterm, None, touch=False, spread_weight=0.0, feedback=feedback)
        return [h.id for h in recall.recall(question, limit=5)]

    assert second not in ids(0)  # the question alone never names Uppsala
    assert second in ids(1) and second in ids(3)  # the words of the first hit do



def test_sentence_ranking_finds_the_one_sentence_a_long_memory_buries_and_embeds_it_once():
    from conftest import CountingEmbedder

    embedder = CountingEmbedder()
    longterm = LongTermMemory(embedder, InMemoryVectorStore())
    filler = " ".join(f"Errand {n} took ages at the market stall number {n}." for n in range(12))
    buried = longterm.remember(f"Zed: {filler} You asked how the violin recital went.").id
    for n in range(30):
        longterm.remember(f"Ann: how the violin lesson went, chapter {n}?")
    question = "How the violin recital went?"
    whole = [m.id for m in longterm.query(question, limit=31, mode="vector")]
    assert whole.index(buried) > 0  # the whole memory's vector is blurred by its filler
    recall = AgentRecall(longterm, None, touch=False, spread_weight=0.0, weights={"longterm": 0.0},
                         sentence_weight=1.0)
    assert recall.recall(question, limit=3)[0].id == buried  # its best sentence is the question's
    before = embedder.texts
    recall.recall(question, limit=3)
    assert embedder.texts - before <= 3  # the query again, no sentence re-embedded


def test_sentence_options_out_of_range_are_refused():
    longterm = LongTermMemory(HashEmbedder(64), InMemoryVectorStore())
    with pytest.raises(ValueError, match="sentence"):
        AgentRecall(longterm, sentence_weight=-1.0)
    with pytest.raises(ValueError, match="sentence"):
        AgentRecall(longterm, sentence_pool=0)


def test_a_chat_lines_later_sentences_keep_who_said_them():
    from mettaclaw.memory.recall import labelled_sentences

    assert labelled_sentences("Melanie: Yep, Caroline. I'm off to go swimming with the kids.") == [
        "Melanie: Yep, Caroline.", "Melanie: I'm off to go swimming with the kids."]
    assert labelled_sentences("Mary Ann Lee: Hi there. We moved house today.")[1] == "Mary Ann Lee: We moved house today."
    # no label, or a sentence that merely contains a colon: left as they are
    assert labelled_sentences("remember this: the key is under the mat. And the code is 42.") == [
        "remember this: the key is under the mat.", "And the code is 42."]
