"""Decay, prune and cap follow their formulas and order, and never drop a current reinforced fact."""

from __future__ import annotations

import math

import pytest

from mettaclaw.memory.dream.consolidate import HALF_LIFE_DAYS, Policy, consolidate, decay_factor, keep_score
from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
from mettaclaw.memory.semantic.sqlite_store import SqliteSemanticStore
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore

DAY = 86400.0
T0 = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def setup(store=None):
    clock = Clock()
    sem = SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), store or InMemorySemanticStore(), clock=clock)
    return sem, clock


def test_decay_halves_strength_after_one_half_life_episodes_faster_than_facts():
    sem, clock = setup()
    summary = sem.learn("We talked about the garden and the roses.", kind="summary", source_episodes=["ep-1", "ep-2"]).id
    fact = sem.learn("The garden has twelve rose bushes.", source_episodes=["ep-1"]).id
    clock.now = T0 + 7 * DAY
    result = consolidate(sem, clock.now, Policy(max_records=None))
    assert result.decayed == 2
    assert math.isclose(sem.get(summary).strength, 0.5, rel_tol=1e-9)
    assert math.isclose(sem.get(fact).strength, 0.5 ** (7 / 30), rel_tol=1e-9)
    assert HALF_LIFE_DAYS["summary"] == 7.0 and HALF_LIFE_DAYS["concept"] == 30.0


def test_a_theme_decays_like_a_concept_and_outlives_a_batch_summary_of_the_same_age():
    sem, clock = setup()
    summary = sem.learn("Maria: We talked about the garden and the roses.", kind="summary",
                        tags=["dream"], source_episodes=["ep-1", "ep-2"]).id
    theme = sem.learn("Maria: I grow roses. The garden needs rain.", kind="summary",
                      tags=["dream", "theme"], source_episodes=["ep-1", "ep-3"]).id
    clock.now = T0 + 60 * DAY  # the person has not spoken for two months
    result = consolidate(sem, clock.now, Policy(max_records=None))
    assert summary in result.pruned and sem.get(summary) is None
    assert math.isclose(sem.get(theme).strength, 0.5 ** (60 / 30), rel_tol=1e-9)


def test_decay_is_the_same_whether_run_often_or_once(tmp_path):
    often, c1 = setup(SqliteSemanticStore(tmp_path / "a.sqlite3"))
    once, c2 = setup(SqliteSemanticStore(tmp_path / "b.sqlite3"))
    a = often.learn("Coffee beans are kept in the blue tin.", source_episodes=["ep-1"]).id
    b = once.learn("Coffee beans are kept in the blue tin.", source_episodes=["ep-1"]).id
    for day in (1, 3, 10, 20):
        c1.now = T0 + day * DAY
        consolidate(often, c1.now, Policy(max_records=None))
    c2.now = T0 + 20 * DAY
    consolidate(once, c2.now, Policy(max_records=None))
    assert math.isclose(often.get(a).strength, once.get(b).strength, rel_tol=1e-9)
    assert math.isclose(once.get(b).strength, decay_factor(20 * DAY, 30.0), rel_tol=1e-9)


def test_use_restarts_the_clock():
    sem, clock = setup()
    rid = sem.learn("The spare key is under the flower pot.", source_episodes=["ep-1"]).id
    clock.now = T0 + 10 * DAY
    sem.recall("where is the spare key", touch=True)
    clock.now = T0 + 13 * DAY
    consolidate(sem, clock.now, Policy(max_records=None))
    rec = sem.get(rid)
    assert rec.access_times and math.isclose(rec.strength, decay_factor(3 * DAY, 30.0) * _after_touch(), rel_tol=1e-9)


def _after_touch() -> float:
    from mettaclaw.memory.semantic.graph import hebbian

    return hebbian(1.0)


def test_prune_drops_what_fell_under_the_floor_but_keeps_reinforced_facts():
    sem, clock = setup()
    weak = sem.learn("We watched a film about volcanoes.", kind="summary", source_episodes=["ep-1", "ep-2"]).id
    kept = sem.learn("Alice is allergic to peanuts.", source_episodes=["ep-3"]).id
    sem.learn("Alice is allergic to peanuts.", source_episodes=["ep-4"])  # reinforced
    lone = sem.learn("The blue mug has a chip on the rim.", source_episodes=["ep-5"]).id
    said_twice = sem.learn("Bob takes the 8:15 bus.", source_episodes=["ep-6", "ep-7"]).id  # one write, two episodes
    clock.now = T0 + 400 * DAY  # far beyond every half-life: all strengths ~0
    result = consolidate(sem, clock.now, Policy(max_records=None))
    assert set(result.pruned) == {weak, lone}
    assert sem.get(said_twice) is not None
    assert sem.get(weak) is None and sem.get(lone) is None
    assert sem.get(kept) is not None and sem.get(kept).reinforcements == 2 and sem.get(kept).current


def test_cap_keeps_the_most_valuable_after_pruning_and_never_a_protected_fact():
    sem, clock = setup()
    protected = sem.learn("Bob works at the bakery.", source_episodes=["ep-1"]).id
    sem.learn("Bob works at the bakery.", source_episodes=["ep-2"])
    ids = [sem.learn(text, source_episodes=[f"ep-{i + 10}"]).id for i, text in enumerate(
        ["The kettle is new.", "A red bike stands in the hall.", "The fridge hums at night.",
         "Rain is forecast on Friday."])]
    for _ in range(3):  # recalled often: worth keeping
        assert sem.recall("red bike stands in the hall", 1, touch=True)[0].id == ids[1]
    clock.now = T0 + 2 * DAY
    result = consolidate(sem, clock.now, Policy(max_records=2))
    assert result.pruned == [] and len(result.capped) == 3
    assert {r.id for r in sem} == {protected, ids[1]}


def test_cap_reports_when_protected_facts_alone_exceed_it():
    sem, clock = setup()
    for name in ("Ann", "Ben", "Cy"):
        for ep in ("ep-1", "ep-2"):
            sem.learn(f"{name} lives in Leeds.", source_episodes=[f"{name}-{ep}"])
    result = consolidate(sem, T0 + DAY, Policy(max_records=1))
    assert result.capped == [] and result.protected_over_cap == 2 and len(sem) == 3


def test_superseded_versions_are_never_pruned():
    sem, clock = setup()
    old = sem.learn("Alice lives in Paris.", source_episodes=["ep-1"]).id
    clock.now = T0 + DAY
    sem.learn("Alice lives in Rome.", source_episodes=["ep-2"])
    assert not sem.get(old).current
    clock.now = T0 + 900 * DAY
    consolidate(sem, clock.now, Policy(max_records=None))
    assert sem.get(old) is not None  # history stays


@pytest.mark.parametrize("late", [False, True])
def test_the_current_version_a_history_leads_to_is_never_pruned_or_capped(late):
    """Dropped for disuse, it left its closed versions superseded by a record that was gone, and
    `supersede` of one of them named that record to supersede instead. `late`: the old value was
    learned after the new one (a past version pointing at a first record)."""
    sem, clock = setup()
    first = sem.learn("Alice lives in Rome." if late else "Alice lives in Paris.", source_episodes=["ep-1"]).id
    clock.now = T0 + DAY
    if late:
        second = sem.learn("Alice lives in Paris.", source_episodes=["ep-2"], valid_from=T0 - DAY).id
        head, closed = first, second
    else:
        head, closed = sem.supersede(first, "Alice lives in Rome.").id, first
    assert sem.get(closed).superseded_by == head and sem.get(head).current
    lone = sem.learn("The blue mug has a chip on the rim.", source_episodes=["ep-5"]).id
    clock.now = T0 + 900 * DAY
    result = consolidate(sem, clock.now, Policy(max_records=None))
    assert result.pruned == [lone] and sem.get(head).current and sem.get(closed) is not None
    other = sem.learn("The kettle is new.", source_episodes=["ep-6"]).id
    result = consolidate(sem, clock.now + DAY, Policy(max_records=1))
    assert result.capped == [other] and sem.get(head) is not None
    assert sem.supersede(head, "Alice lives in Oslo.").superseded == [head]


@pytest.mark.parametrize("idle_days,half_life,expected", [(0, 7, 1.0), (7, 7, 0.5), (14, 7, 0.25), (30, 30, 0.5)])
def test_decay_factor(idle_days, half_life, expected):
    assert math.isclose(decay_factor(idle_days * DAY, half_life), expected)


def test_keep_score_orders_by_confidence_strength_and_use():
    sem, _ = setup()
    rec = sem.get(sem.learn("A fact.", source_episodes=["e"]).id)
    used = sem.get(rec.id)
    used.access_times = [T0] * 20
    assert keep_score(used, T0) > keep_score(rec, T0)


def test_consolidation_holds_the_memory_lock_one_chunk_at_a_time():
    """A dream over a large layer must not stall the agent's turns: the lock is taken per chunk (a
    whole pass over 20,000 records held it 3.2 s and made fuzzed turns wait over 1 s)."""
    import threading

    class CountingLock:
        def __init__(self) -> None:
            self.inner, self.holds = threading.RLock(), 0

        def __enter__(self) -> None:
            self.inner.acquire()
            self.holds += 1

        def __exit__(self, *exc) -> None:
            self.inner.release()

    mem = SemanticMemory(HashEmbedder(), InMemoryVectorStore(), InMemorySemanticStore(), clock=lambda: 1000.0)
    for n in range(120):
        mem.learn(f"concept number {n}", name=f"concept {n}", kind="concept")
    lock = CountingLock()
    out = consolidate(mem, 1000.0 + 40 * 86_400, lock=lock, chunk=25)
    assert out.decayed == 120
    assert lock.holds >= 120 // 25 + 2, "one hold a chunk, plus the stamp and the edges"
