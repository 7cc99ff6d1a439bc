"""Reading does not write: a query notes the semantic records it used, and the writer applies those
touches (access time, stability, strength, Hebbian links) at the next write, the turn's end or close."""

from __future__ import annotations

import sqlite3

from conftest import FakeClock

from mettaclaw.memory.semantic.graph import hebbian
from mettaclaw.messages import Message

QUESTION = "Alice flat Paris"  # every word in both facts: both pass the floor


def alice(memory) -> tuple[str, str]:
    """Two related facts, mirrored for `query`."""
    a, b = (memory.semantic.learn(text).id for text in ("Alice lives in Paris in a flat.",
                                                          "Alice's flat in Paris has a balcony."))
    memory.semantic.relate(a, "RELATED_TO", b, weight=0.3)
    memory.sync_mirror()
    return a, b


def state(memory, a: str, b: str) -> tuple:
    records = memory.semantic.records
    edge = records.get_edge(min(a, b), max(a, b), "RELATED_TO")
    return tuple((r.access_times, r.stability, r.strength) for r in records.get_many([a, b])), edge.weight, edge.co_access


def test_a_query_writes_nothing_and_the_next_turn_applies_its_touches(open_test_memory, tmp_path) -> None:
    clock = FakeClock()
    memory = open_test_memory(dream=False, clock=clock)
    a, b = alice(memory)
    store = sqlite3.connect(tmp_path / "memory" / "semantic" / "records.sqlite3")
    version = store.execute("PRAGMA data_version").fetchone()[0]  # changes when another connection commits
    before = state(memory, a, b)
    clock.advance(3600)
    asked = clock.now
    assert {a, b} <= {h.id for h in memory.query(QUESTION, 5)}
    assert memory.semantic.recall("Alice Paris", 5)  # the `recall` skill's read
    assert store.execute("PRAGMA data_version").fetchone()[0] == version and state(memory, a, b) == before
    clock.advance(60)
    memory.record_turn("2026-01-01 11:01:00", [Message("thanks", "Alice")], [])  # the turn ends
    assert store.execute("PRAGMA data_version").fetchone()[0] != version
    ((times, stability, _), _), weight, co_access = state(memory, a, b)
    assert times == [asked, asked] and stability > before[0][0][1]  # each use at the time of its read
    assert weight == hebbian(hebbian(before[1])) and co_access == before[2] + 2  # used together twice
    assert memory.query(QUESTION, 5, touch=False) and memory.apply_touches() == 0
    store.close()


def test_touches_are_applied_before_a_semantic_write_and_survive_a_close(open_test_memory) -> None:
    clock = FakeClock()
    memory = open_test_memory(dream=False, clock=clock, folder="kept")
    a, b = alice(memory)
    clock.advance(3600)
    asked = clock.now
    memory.query(QUESTION, 5)
    clock.advance(60)
    memory.semantic.learn("Bob lives in Lyon.")  # a write: the uses before it count first
    assert memory.semantic.get(a).access_times == [asked]
    memory.query(QUESTION, 5)
    memory.close()  # no turn ended since
    again = open_test_memory(dream=False, clock=clock, folder="kept")
    assert again.semantic.get(a).access_times == [asked, clock.now]
