"""Recall modes, filters, score parts, as-of, tags, stats and the KNOWLEDGE block."""

import math

import pytest
from conftest import FakeClock, TickingClock

from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
from mettaclaw.memory.semantic.scoring import sigmoid
from mettaclaw.memory.semantic.sqlite_store import SqliteSemanticStore
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore

DAY = 86400.0


@pytest.fixture(params=["memory", "sqlite"])
def mem(request, tmp_path):
    store = InMemorySemanticStore() if request.param == "memory" else SqliteSemanticStore(tmp_path / "r.sqlite3")
    m = SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), store, clock=TickingClock())
    m.learn("Open the gripper before grasping a cup", tags=["action", "success", "action_type:plan"], category="action_pattern")
    m.learn("Grasping a wet cup failed twice", tags=["action", "failure"], category="action_pattern")
    m.learn("The kitchen is next to the hallway", tags=["place"], category="place")
    m.learn("a cup for hot drinks", name="coffee mug", kind="concept", tags=["object"], category="object")
    yield m
    m.close()


def contents(hits):
    return [h.record.content for h in hits]


def test_tag_filters_all_any_none(mem):
    assert set(contents(mem.recall("cup", tags_all=["action", "success"]))) == {"Open the gripper before grasping a cup"}
    assert set(contents(mem.recall("cup", tags_any=["failure", "object"]))) == {"Grasping a wet cup failed twice",
                                                                                 "a cup for hot drinks"}
    got = set(contents(mem.recall("cup", tags_none=["action"])))
    assert "Grasping a wet cup failed twice" not in got and "a cup for hot drinks" in got


def test_logical_mode_lists_by_filters_without_a_query(mem):
    assert set(contents(mem.recall(mode="logical", kind="concept"))) == {"a cup for hot drinks"}
    assert set(contents(mem.recall(mode="logical", category="place"))) == {"The kitchen is next to the hallway"}
    assert len(mem.recall(mode="logical", min_confidence=0.55)) == 4
    assert mem.recall(mode="logical", min_confidence=0.7) == []
    assert set(contents(mem.recall(mode="logical", name_pattern="coffee*"))) == {"a cup for hot drinks"}
    assert len(mem.recall(4, mode="logical")) == 4  # the layer protocol's recall(limit, **filters)


def test_hybrid_filters_then_ranks(mem):
    hits = mem.recall("grasping a cup", mode="hybrid", tags_all=["action"], explain=True)
    assert contents(hits)[0] in {"Open the gripper before grasping a cup", "Grasping a wet cup failed twice"}
    assert all("action" in h.record.tags for h in hits) and len(hits) == 2
    assert hits[0].parts["cosine"] > 0


def test_time_range_filter(mem):
    first = mem.recall(mode="logical", kind="fact")[-1].record
    assert set(contents(mem.recall(mode="logical", time_to=first.recorded_at))) == {first.content}


def test_score_parts_add_up_to_the_spec_formula(mem):
    for hit in mem.recall("cup for drinks", explain=True):
        p = hit.parts
        expected = 0.4 * p["similarity"] + 0.35 * sigmoid(p["activation"]) + 0.25 * p["retrievability"]
        assert hit.score == pytest.approx(expected) == pytest.approx(p["score"])
        assert 0 < p["retrievability"] <= 1
    assert mem.recall("cup")[0].parts is None  # only on request


def test_activation_and_retrievability_follow_use():
    clock = TickingClock()
    m = SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), InMemorySemanticStore(), clock=clock)
    res = m.learn("the boiler pressure should be 1.5 bar")
    clock.now += 10 * DAY
    first = m.recall("boiler pressure", explain=True)[0].parts
    assert first["retrievability"] == pytest.approx(1 / (1 + 10 / (9 * 30)), rel=1e-3)
    assert first["base_level"] == pytest.approx(math.log((10 * DAY + 1) ** -0.5), rel=1e-3)
    assert not m.get(res.id).access_times  # a read notes its use; the writer applies it
    m.apply_touches()
    second = m.recall("boiler pressure", explain=True)[0].parts
    assert second["base_level"] > first["base_level"] and second["retrievability"] > first["retrievability"]
    assert m.get(res.id).stability > 30.0


def test_spreading_from_context_raises_a_linked_record():
    m = SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), InMemorySemanticStore(), clock=TickingClock())
    a = m.learn("Project Falcon ships in March")
    b = m.learn("Project Heron ships in March")
    ctx = m.learn("Falcon's lead is Judy", kind="summary")
    m.relate(ctx.id, "RELATED_TO", b.id, weight=0.9)
    plain = {h.id: h.parts for h in m.recall("project ships in march", explain=True, touch=False)}
    with_ctx = {h.id: h.parts for h in m.recall("project ships in march", explain=True, touch=False, context=[ctx.id])}
    assert with_ctx[b.id]["spreading"] == pytest.approx(0.9 * 1.6) and with_ctx[a.id]["spreading"] == 0
    assert with_ctx[b.id]["score"] > plain[b.id]["score"]


def test_as_of_and_history(mem):
    clock = mem.clock
    old = mem.learn("The kitchen light switch is broken")
    t = clock.now + 0.5
    clock.now += DAY
    mem.supersede(old.id, "The kitchen light switch was repaired")
    assert "The kitchen light switch is broken" not in contents(mem.recall("kitchen light switch"))
    assert "The kitchen light switch is broken" in contents(mem.recall("kitchen light switch", as_of=t))
    assert "The kitchen light switch is broken" in contents(mem.recall("kitchen light switch", include_history=True))


def test_tags_and_stats(mem):
    assert mem.tags() == {"action": 2, "action_type:plan": 1, "failure": 1, "object": 1, "place": 1, "success": 1}
    st = mem.stats()
    assert st["records"] == 4 and st["by_kind"] == {"fact": 3, "concept": 1}
    assert st["top_tags"]["action"] == 2 and st["oldest"] <= st["newest"]


@pytest.mark.parametrize("kwargs, message", [
    ({"query": "x", "mode": "fuzzy"}, "mode"),
    ({"query": ""}, "needs a query"),
    ({"query": "x", "limit": 0}, "limit"),
    ({"query": "x", "as_of": "someday"}, "not a time"),
])
def test_bad_recall_arguments_are_refused(mem, kwargs, message):
    with pytest.raises(ValueError, match=message):
        mem.recall(**kwargs)


def test_knowledge_block_shows_relevant_current_facts_within_budget(mem):
    mem.learn("Alice lives in Paris")
    mem.learn("Alice moved to Berlin")
    mem.relate("coffee mug", "IS_A", "container")
    block = mem.knowledge_block("Where does Alice live these days?", 400)
    assert block.startswith("KNOWLEDGE") and "Alice moved to Berlin" in block and "Paris" not in block
    assert len(block) <= 400
    mug = mem.knowledge_block("I need a coffee mug for hot drinks", 400)
    assert "[concept c=" in mug and "IS_A container" in mug
    assert mem.knowledge_block("zzz qqq", 400) == ""
    assert mem.knowledge_block("Where does Alice live?", 0) == ""
    tight = mem.knowledge_block("Where does Alice live these days?", 120)
    assert 0 < len(tight) <= 120


def test_a_query_past_the_length_limit_is_refused_but_a_long_message_still_gets_its_knowledge(mem):
    with pytest.raises(ValueError, match="at most 20,000"):
        mem.recall("cup " * 6_000)
    block = mem.knowledge_block("I need a coffee mug for hot drinks. " + "Nothing else matters here. " * 2_000, 400)
    assert "coffee mug" in block


def test_a_long_message_is_read_for_names_once_a_name_and_within_the_time_budget(mem, monkeypatch):
    """A pasted log of thousands of lines asked the store once per word n-gram, whatever the budget:
    8.7 s for 1 MB. Each distinct name is asked once, the first words only, and not past the budget."""
    asked = []
    find = mem.records.find_by_key
    monkeypatch.setattr(mem.records, "find_by_key", lambda **kw: asked.append(kw["name_norm"]) or find(**kw))
    log = "I need the coffee mug. " + " ".join(f"error E{n} at line {n}." for n in range(20_000))
    names = mem._named(log, None)
    assert [r.name for r in names] == ["coffee mug"]
    assert len(asked) == len(set(asked)) <= 3 * 5_000  # the first 5,000 words, n-grams of up to 3
    asked.clear()
    assert mem._named(log, None, left=lambda: 0.0)[0].name == "coffee mug"  # what it read before the budget ran out
    assert len(asked) <= 3 * 64
    mem.timer = FakeClock(0.0)  # no time passes: every level fits the budget
    full = mem.context(log, 400, budget_ms=50)
    assert full.level == "full" and full.text.endswith("\n- [concept c=0.60] coffee mug: a cup for hot drinks")
    mem.timer = TickingClock()  # a second a reading: the budget is gone once the names are read
    names = mem.context(log, 400, budget_ms=50)
    assert names.level == "names" and names.text.endswith("\n- coffee mug [concept] (0 episodes)")


def test_a_record_unused_for_years_falls_below_the_retrieval_threshold(mem):
    """ACT-R's tau: years without a use drop a record from retrieval, not from a listing or the past."""
    old = mem.recall("coffee mug cup for hot drinks", explain=True, touch=False)[0]
    assert old.parts["retrieval_probability"] > 0.99
    mem.clock.now += 30 * 365 * DAY
    assert "a cup for hot drinks" not in contents(mem.recall("a cup for hot drinks"))
    assert "a cup for hot drinks" in contents(mem.recall(mode="logical", kind="concept"))
    assert "a cup for hot drinks" in contents(mem.recall("a cup for hot drinks", include_history=True))


def test_act_r_noise_is_repeatable_from_its_seed(tmp_path):
    def noises():
        m = SemanticMemory(HashEmbedder(64), InMemoryVectorStore(), InMemorySemanticStore(), clock=TickingClock())
        for text in ("alpha cup", "beta cup", "gamma cup"):
            m.learn(text)
        return [round(h.parts["noise"], 9) for h in m.recall("cup", explain=True, touch=False)]

    first = noises()  # drawn per candidate (in id order, and ids are random), the same draws from the same seed
    assert sorted(first) == sorted(noises()) and len(set(first)) == len(first) > 1
