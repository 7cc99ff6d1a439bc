"""Memory and reasoning skills through the agent loop, on in-memory stores and the hash embedder."""

from __future__ import annotations

import pytest

from mettaclaw.memory.embedders import HashEmbedder
from mettaclaw.memory.longterm import LongTermMemory
from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
from mettaclaw.memory.vectors import InMemoryVectorStore


@pytest.fixture
def tiers():
    embedder = HashEmbedder()
    return (LongTermMemory(embedder, InMemoryVectorStore()),
            SemanticMemory(embedder, InMemoryVectorStore(), InMemorySemanticStore()))


def test_remember_then_query_in_the_same_turn(make_agent, tiers) -> None:
    longterm, semantic = tiers
    agent, llm, channel, _ = make_agent(["remember the spare key is under the blue flowerpot\nquery where is the spare key"],
                                        ["hi"], memory=longterm)
    outcome = agent.turn()
    assert outcome.results[0].startswith('(remember "the spare key') and "REMEMBER-SUCCESS" in outcome.results[0]
    assert "blue flowerpot" in outcome.results[1]
    stored = longterm.query("spare key", limit=1)[0]
    assert stored.source == "agent" and stored.time == agent.now_text()


def test_remember_a_belief_and_infer_from_it(make_agent, tiers) -> None:
    longterm, _ = tiers
    replies = ["remember (--> sam human) (stv 1 0.9)\nremember (--> human mortal) (stv 1 0.9)\nremember sam likes tea",
               "infer is sam mortal?"]
    agent, llm, channel, _ = make_agent(replies, ["go"], memory=longterm)
    first = agent.turn()
    assert "belief (--> sam human)" in first.results[0]
    assert [m.kind for m in longterm.query("sam", limit=5, kind="belief")] == ["belief", "belief"]
    second = agent.turn()
    text = second.results[0]
    assert "(--> sam mortal)" in text and "0.81" in text and "deduction" in text
    ids = {m.id for m in longterm.query("sam human mortal", limit=5, kind="belief")}
    assert any(i in text for i in ids)  # the proof trail names the memories it used
    assert len(longterm) == 3  # nothing derived was stored


def test_malformed_belief_is_refused_with_its_cause(make_agent, tiers) -> None:
    longterm, _ = tiers
    agent, *_ = make_agent(["remember (--> cat animal) (stv 1.5 0.9)"], ["go"], memory=longterm)
    outcome = agent.turn()
    assert "ERROR" in outcome.results[0] and "malformed" in outcome.results[0]
    assert len(longterm) == 0


def test_nal_and_pln_skills(make_agent) -> None:
    agent, *_ = make_agent(["nal (--> sam human) (stv 1 0.9) (--> human mortal) (stv 1 0.9)\n"
                            "pln (Inheritance a b) (stv 1 0.9) (Inheritance b c) (stv 1 0.9)\nnal (--> a) (stv 1 0.9)"], ["go"])
    outcome = agent.turn()
    assert "(--> sam mortal) (stv 1.0 0.81)" in outcome.results[0]
    assert "(Inheritance a c) (stv 1.0 0.81)" in outcome.results[1]
    assert "ERROR" in outcome.results[2]


def test_learn_recall_and_the_knowledge_block(make_agent, tiers) -> None:
    longterm, semantic = tiers
    agent, llm, channel, _ = make_agent(["learn Alice lives in Paris #person", "recall where does Alice live"],
                                        ["hi"], memory=longterm, semantic=semantic)
    first = agent.turn()
    assert "LEARN" in first.results[0] or "learn" in first.results[0].lower()
    channel.put("where does Alice live?")
    second = agent.turn()
    assert "Alice lives in Paris" in second.results[0]
    assert "KNOWLEDGE:" in llm.prompts[1][1] and "Paris" in llm.prompts[1][1]


def test_query_modes_reach_semantic_memory(make_agent, tiers) -> None:
    longterm, semantic = tiers
    agent, *_ = make_agent(["learn Bob works at the bakery\nremember Bob said the bread was late today\n"
                            "query semantic: where does Bob work\nquery hybrid: Bob bakery bread"],
                           ["go"], memory=longterm, semantic=semantic)
    outcome = agent.turn()
    assert "Bob works at the bakery" in outcome.results[2] and "episode" not in outcome.results[2]
    assert "Bob works at the bakery" in outcome.results[3] and "bread was late" in outcome.results[3]


def test_skills_of_missing_tiers_say_what_is_not_configured(make_agent) -> None:
    agent, *_ = make_agent(["remember x\nlearn y\ninfer z"], ["go"])
    results = agent.turn().results
    assert "long-term memory is not configured" in results[0]
    assert "semantic memory is not configured" in results[1]
    assert "long-term memory is not configured" in results[2]


def test_every_memory_and_reasoning_skill_is_declared_once_with_help(make_agent) -> None:
    from mettaclaw.memory.semantic.skills import SKILLS

    agent, *_ = make_agent([], ())
    for name in [*SKILLS, "nal", "pln", "infer", "remember", "query"]:
        spec = agent.skills[name]
        assert spec.help and spec.file.endswith(".metta")


def test_dream_skill_consolidates_the_agents_own_episodes_in_the_background(make_agent, tiers, tmp_path) -> None:
    from mettaclaw.memory.dream import Dreamer

    longterm, semantic = tiers
    replies = ["send noted"] * 12 + ["dream now", "dream status"]
    agent, llm, channel, clock = make_agent(replies, (), memory=longterm, semantic=semantic, maxNewInputLoops=40)
    dreamer = Dreamer(semantic, agent.trace, longterm.embedder, tmp_path / "dream.json", longterm=longterm,
                      every_n=1000, interval_s=None)
    agent.attach_dreamer(dreamer)
    for i in range(12):
        channel.put(f"Remember that Ada feeds the cat every morning at seven (day {i})")
        clock.advance(3600)
        agent.turn()
    started = agent.turn()
    assert started.results[0].startswith('(dream "now") -> DREAM-STARTED') and "background" in started.results[0]
    assert dreamer.wait(timeout=120) is not None
    status = agent.turn().results[0]
    assert "added" in status and "ERROR" not in status
    assert len(semantic) > 0  # the dream turned episodes into records
    found = agent.memory_skills.query("when does Ada feed the cat")
    assert "cat" in found


def test_query_uses_the_agents_fused_recall_when_semantic_memory_is_there(make_agent, tiers) -> None:
    longterm, semantic = tiers
    agent, *_ = make_agent(["learn Carol plays the cello\nremember Carol had a concert on Friday\n"
                            "query Carol concert\nquery episodic: Carol concert"], ["go"], memory=longterm, semantic=semantic)
    results = agent.turn().results
    assert "[longterm] Carol had a concert on Friday" in results[2]
    assert results[3].split(" -> ", 1)[1].startswith("(") and "Carol had a concert" in results[3]


def test_a_turn_without_memory_work_does_not_wait_for_a_dream_writing(make_agent, tiers, tmp_path) -> None:
    import threading

    from mettaclaw.memory.dream import Dreamer

    longterm, semantic = tiers
    agent, llm, channel, _ = make_agent(["send still responsive\nshell echo fine"], (), memory=longterm, semantic=semantic)
    dreamer = Dreamer(semantic, agent.trace, longterm.embedder, tmp_path / "dream.json", longterm=longterm,
                      every_n=1000, interval_s=None)
    agent.attach_dreamer(dreamer)
    holding, release = threading.Event(), threading.Event()

    def dream_write() -> None:  # stands for a dream in the middle of a memory write
        with dreamer.lock:
            holding.set()
            release.wait(60)

    writer = threading.Thread(target=dream_write)
    writer.start()
    try:
        assert holding.wait(10)
        outcome = agent.turn()  # completes while the "dream" still holds the memory lock
        assert outcome.results == ['(send "still responsive") -> SENT', '(shell "echo fine") -> fine\n']
        assert writer.is_alive()
    finally:
        release.set()
        writer.join()
