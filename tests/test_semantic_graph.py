"""The weighted graph: registry, relate, Hebbian co-retrieval, decay, Jaccard, provenance, spreading."""

from pathlib import Path

import pytest
from conftest import TickingClock

from mettaclaw.memory.core.ranking import spread_with
from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
from mettaclaw.memory.semantic.graph import canonical_relation, decay_edges, hebbian, jaccard
from mettaclaw.memory.semantic.sqlite_store import SqliteSemanticStore
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore

DAY = 86400.0


def make_memory(clock=None, store=None):
    return SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), store or InMemorySemanticStore(),
                          clock=clock or TickingClock())


def test_registry_has_builtins_canonicalises_and_persists_learned_types(tmp_path):
    mem = make_memory(store=SqliteSemanticStore(tmp_path / "g.sqlite3"))
    types = mem.relations.types()
    assert types["IS_A"] == {"symmetric": False, "builtin": True}
    assert types["SIMILAR_TO"]["symmetric"] and types["TRENDS_WITH"]["symmetric"]
    assert canonical_relation("is a") == "IS_A" and canonical_relation("hasPart") == "HAS_PART"
    with pytest.raises(ValueError, match="not a name"):
        canonical_relation("!!")
    assert mem.relations.ensure("grows on") == ("GROWS_ON", True)
    assert mem.relations.ensure("GROWS_ON") == ("GROWS_ON", False)
    mem.close()
    again = make_memory(store=SqliteSemanticStore(tmp_path / "g.sqlite3"))
    assert again.relations.types()["GROWS_ON"] == {"symmetric": False, "builtin": False}
    again.close()


def test_relate_creates_concepts_starts_at_0_1_and_strengthens_on_repeat():
    mem = make_memory()
    edge = mem.relate("coffee mug", "IS_A", "container")
    assert edge.weight == pytest.approx(0.1)
    assert mem.resolve("coffee mug").kind == "concept" and mem.resolve("container").kind == "concept"
    again = mem.relate("coffee_mug", "is a", "Container")
    assert again.key() == edge.key() and again.weight == pytest.approx(hebbian(0.1)) == pytest.approx(0.19)
    sym1 = mem.relate("tea", "SIMILAR_TO", "coffee")
    sym2 = mem.relate("coffee", "SIMILAR_TO", "tea")
    assert sym1.key() == sym2.key()  # symmetric: stored once
    with pytest.raises(ValueError, match="itself"):
        mem.relate("tea", "IS_A", "tea")
    with pytest.raises(ValueError, match="outside"):
        mem.relate("tea", "IS_A", "drink", weight=2.0)
    with pytest.raises(ValueError, match="provenance"):
        mem.relate("tea", "DERIVED_FROM", "drink")


def test_hebbian_weight_moves_by_the_formula_when_retrieved_together():
    mem = make_memory()
    a = mem.learn("kettle boils water for tea")
    b = mem.learn("teapot steeps tea leaves in water")
    c = mem.learn("the bicycle tyre is flat")
    edge = mem.relate(a.id, "RELATED_TO", b.id, weight=0.3)
    lone = mem.relate(a.id, "USES", c.id, weight=0.3)
    hits = {h.id for h in mem.recall("tea water", limit=2)}
    assert hits == {a.id, b.id}
    assert mem.records.get_edge(edge.src, edge.dst, "RELATED_TO").weight == 0.3  # noted, written by the writer
    mem.apply_touches()
    w = mem.records.get_edge(edge.src, edge.dst, "RELATED_TO")
    assert w.weight == pytest.approx(0.3 + 0.1 * (1 - 0.3)) and w.co_access == 1
    mem.recall("tea water", limit=2)
    mem.apply_touches()
    assert mem.records.get_edge(edge.src, edge.dst, "RELATED_TO").weight == pytest.approx(hebbian(hebbian(0.3)))
    assert mem.records.get_edge(lone.src, lone.dst, "USES").weight == pytest.approx(0.3)  # not co-retrieved
    mem.recall("tea water", limit=2, touch=False)
    assert mem.apply_touches() == 0


def test_unused_edges_decay_by_0_95_after_30_days_and_weak_ones_are_pruned():
    clock = TickingClock()
    mem = make_memory(clock)
    fresh = mem.relate("apple", "IS_A", "fruit", weight=0.5)
    weak = mem.relate("apple", "RELATED_TO", "pie", weight=0.0101)
    mem.learn("apple pie recipe", source_episodes=["ep-5"])
    clock.now += 31 * DAY
    used = mem.relate("pear", "IS_A", "fruit", weight=0.5)
    decayed, pruned = decay_edges(mem.records, mem.clock())
    assert mem.records.get_edge(fresh.src, fresh.dst, "IS_A").weight == pytest.approx(0.475)
    assert mem.records.get_edge(used.src, used.dst, "IS_A").weight == pytest.approx(0.5)
    assert mem.records.get_edge(weak.src, weak.dst, "RELATED_TO") is None
    assert pruned == 1 and decayed >= 1
    derived = [e for e in mem.records.iter_edges() if e.type == "DERIVED_FROM"]
    assert derived and all(e.weight == 1.0 for e in derived)  # provenance never decays


def test_co_occurrence_edges_weigh_jaccard_of_source_episodes():
    mem = make_memory()
    a = mem.learn("navigate to the kitchen", kind="concept", name="navigate kitchen", source_episodes=["ep-1", "ep-2", "ep-3"])
    b = mem.learn("grasp the cup", kind="concept", name="grasp cup", source_episodes=["ep-2", "ep-3", "ep-4", "ep-5"])
    src, dst = sorted([a.id, b.id])
    edge = mem.records.get_edge(src, dst, "RELATED_TO")
    assert edge.weight == pytest.approx(jaccard({"ep-1", "ep-2", "ep-3"}, {"ep-2", "ep-3", "ep-4", "ep-5"})) == pytest.approx(0.4)


class FakeTrace:
    def __init__(self, records):
        self.records = records

    def get(self, episode_id):
        return self.records.get(episode_id)


def test_provenance_links_resolve_to_trace_records():
    mem = make_memory()
    res = mem.learn("Ivan prefers tea", source_episodes=["ep-0", "ep-77"])
    trace = FakeTrace({"ep-0": "first turn", "ep-77": "later turn"})
    assert mem.provenance(res.id, trace) == [("ep-0", "first turn"), ("ep-77", "later turn")]
    hit = mem.recall("Ivan tea")[0]
    assert hit.provenance == ["ep-0", "ep-77"]
    edges = [e for e in mem.records.edges_of(res.id) if e.type == "DERIVED_FROM"]
    assert {(e.dst, e.dst_layer) for e in edges} == {("ep-0", "episodic"), ("ep-77", "episodic")}


def test_provenance_resolves_through_the_real_episodic_trace(tmp_path: Path):
    trace_mod = pytest.importorskip("mettaclaw.memory.episodes.trace")
    trace = trace_mod.EpisodicTrace(tmp_path / "history.metta")
    ep1 = trace.append("2026-01-01 10:00:00", "I moved to Oslo", [])
    ep2 = trace.append("2026-01-02 10:00:00", "Oslo is cold", [])
    mem = make_memory()
    res = mem.learn("The user lives in Oslo", source_episodes=[ep1, ep2])
    links = mem.provenance(res.id, trace)
    assert [ep for ep, _ in links] == [ep1, ep2]
    assert [record.message for _, record in links] == ["I moved to Oslo", "Oslo is cold"]


def test_spreading_over_the_links_reaches_neighbours_and_episodes_grouped_by_layer():
    mem = make_memory()
    a = mem.learn("robot vacuum", kind="concept", source_episodes=["ep-3"])
    mem.relate("robot vacuum", "USES", "battery", weight=0.8)
    mem.relate("battery", "REQUIRES", "charger", weight=0.8)
    mem.relate("robot vacuum", "RELATED_TO", "dust", weight=0.05)
    grouped = spread_with(lambda layer, node: mem.records.links_of(node), {("semantic", a.id): 1.0})
    found = sorted(((layer, node, act) for layer, reached in grouped.items() for node, act in reached), key=lambda t: -t[2])
    names = [(mem.records.get(node).name if layer == "semantic" else node, layer) for layer, node, _ in found]
    assert names[0] == ("ep-3", "episodic")  # provenance edge weight 1.0
    order = [n for n, _ in names]
    assert order.index("battery") < order.index("charger")
    assert "dust" not in order or order.index("dust") > order.index("battery")
    assert all(act > 0 for _, _, act in found)


def test_a_merge_that_rewords_a_concept_hands_its_links_to_the_new_version():
    """A merge's new wording is a new version of the same concept: its relations and citations follow
    it (the closed version keeps the citations of its own episodes), or it dropped out of the graph."""
    mem = make_memory()
    old = mem.learn("a container for hot drinks", name="coffee mug", kind="concept", source_episodes=["ep-1"])
    mem.relate("coffee mug", "IS_A", "container", weight=0.8)
    mem.relate("coffee mug", "SIMILAR_TO", "teacup", weight=0.6)
    new = mem.learn("a ceramic container for hot drinks with a handle", name="coffee mug", kind="concept",
                    source_episodes=["ep-2"])
    assert new.action == "merged" and new.superseded == [old.id]
    links = {(e.type, e.other(new.id)) for e in mem.records.edges_of(new.id)}
    container, teacup = mem.resolve("container").id, mem.resolve("teacup").id
    assert {("IS_A", container), ("SIMILAR_TO", teacup), ("DERIVED_FROM", "ep-1"), ("INSTANCE_OF", "ep-2")} == links
    assert {(e.type, e.other(old.id)) for e in mem.records.edges_of(old.id)} == {("DERIVED_FROM", "ep-1")}
    assert mem.resolve("coffee mug").id == new.id


def test_relate_refuses_a_name_several_records_answer_to_instead_of_making_another():
    mem = make_memory()
    mem.learn("Alex is a carpenter in Oslo", name="Alex", kind="fact")
    mem.learn("Alex", name="Alex", kind="concept")
    with pytest.raises(LookupError, match="names 2 records"):
        mem.relate("Alex", "KNOWS", "Bo")
    assert sum(r.name == "Alex" for r in mem) == 2 and not any(r.content == "Bo" for r in mem)
