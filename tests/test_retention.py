"""Per-scope retention (ttlDays, maxEntries: evicted by the dream's keep score, when the dream runs)
and lenses (`query lens:NAME PHRASE`)."""

from __future__ import annotations

import json
import os
import time

import pytest
from conftest import record_deletes

from mettaclaw.config import load_config
from mettaclaw.memory import open_memory
from mettaclaw.memory.retention import entries
from mettaclaw.skills import SkillError

NOW = 1_790_000_000.0
DAY = 86_400.0


def stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def open_with(tmp_path, **settings):
    (tmp_path / "priors").mkdir(exist_ok=True)
    args = [f"memoryDir={tmp_path / 'memory'}", f"knowledgePriorsDir={tmp_path / 'priors'}", "embeddingprovider=hash",
            "chromaMode=memory", "dreamInterval=0", *(f"{k}={json.dumps(v)}" for k, v in settings.items())]
    config = load_config(args, env={})
    return config, open_memory(config, clock=lambda: NOW, dream=False)


@pytest.fixture(params=["America/New_York", "Asia/Tokyo"])
def zone(request):
    """The machine's local zone set to one west and one east of UTC for the test (TZ and tzset)."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = request.param
    time.tzset()
    yield request.param
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()


def test_an_age_is_the_time_since_the_row_was_written_in_any_zone(tmp_path, zone) -> None:
    """A row's age is `now` less the instant its local time names. It was `now` less the row's index key
    (its time read as UTC): hours off by the zone's offset, so a one-day ttl evicted a 20-hour-old memory
    west of UTC and kept a 28-hour-old one east of it."""
    config, memory = open_with(tmp_path, scopePolicies={"user:bob": {"ttlDays": 1}})
    memory.remember("Bob's parcel arrived at dock 4.", scope="user:bob", time=stamp(NOW - 20 * 3600))
    memory.remember("Bob's parcel left dock 5.", scope="user:bob", time=stamp(NOW - 28 * 3600))
    ages = sorted(age for _, age, _, _ in entries(memory, "user:bob", NOW))
    assert ages == [20 * 3600, 28 * 3600], zone
    memory.evict(config.scopePolicies, NOW)
    assert [m.text for m in memory.index] == ["Bob's parcel arrived at dock 4."], zone
    memory.close()


def test_a_lens_since_days_counts_back_from_now_in_any_zone(tmp_path, zone) -> None:
    """`sinceDays` is an instant (`now` less the days) written as a local time, then compared as times:
    a memory 20 hours old is within one day and one 28 hours old is not, whatever the zone."""
    _, memory = open_with(tmp_path, lenses={"today": {"sinceDays": 1}})
    memory.remember("The harbour crane was repaired.", time=stamp(NOW - 20 * 3600))
    memory.remember("The harbour crane was inspected.", time=stamp(NOW - 28 * 3600))
    lens = load_config(['lenses={"today": {"sinceDays": 1}}'], env={}).lenses["today"]
    assert [h.text for h in memory.query("harbour crane", 10, lens=lens)] == ["The harbour crane was repaired."], zone
    memory.close()


def test_a_scope_keeps_within_its_ttl_and_size(tmp_path) -> None:
    config, memory = open_with(tmp_path, scopePolicies={"user:bob": {"ttlDays": 10, "maxEntries": 6}})
    for n in range(12):  # bob: one memory a day for 12 days, the oldest first
        memory.remember(f"Bob's parcel number {n} arrived at dock {n}.", scope="user:bob", time=stamp(NOW - (12 - n) * DAY))
        memory.remember(f"Alice's parcel number {n} arrived at dock {n}.", scope="user:alice", time=stamp(NOW - (12 - n) * DAY))
    fact = memory.semantic.learn("Bob's favourite dock is dock 3", scope="user:bob")
    for _ in range(3):
        memory.semantic.touch([fact.id])  # recalled often: a high keep score
    memory.sync_mirror()
    before_alice = len(entries(memory, "user:alice", NOW))
    memory.dreamer.retention = lambda now: memory.evict(config.scopePolicies, now)
    report = memory.dreamer.dream("test")
    kept = entries(memory, "user:bob", NOW)
    assert len(kept) == 6 and all(age <= 10 * DAY for _, age, _, _ in kept)
    assert fact.id in {entry_id for _, _, entry_id, _ in kept}, "the most used record is kept"
    assert len(report.pruned) >= 7
    texts = [m.text for m in memory.index]
    assert "Bob's parcel number 0 arrived at dock 0." not in texts and "Bob's parcel number 11 arrived at dock 11." in texts
    assert len(entries(memory, "user:alice", NOW)) == before_alice, "other scopes are untouched"
    memory.close()


def test_open_memory_wires_retention_into_the_dream(tmp_path) -> None:
    _, memory = open_with(tmp_path, scopePolicies={"user:bob": {"maxEntries": 1}})
    for n in range(3):
        memory.remember(f"note {n} about the harbour", scope="user:bob", time=stamp(NOW - n * DAY))
    memory.dreamer.dream("test")
    assert len(entries(memory, "user:bob", NOW)) == 1
    memory.close()


def test_evicted_memories_go_in_one_store_delete(tmp_path) -> None:
    config, memory = open_with(tmp_path, scopePolicies={"user:bob": {"maxEntries": 2}})
    for n in range(6):
        memory.remember(f"note {n} about the harbour", scope="user:bob", time=stamp(NOW - n * DAY))
    deletes = record_deletes(memory.index.vector_store)
    gone = memory.evict(config.scopePolicies, NOW)
    assert len(gone) == 4 and deletes == [gone], "one store delete for every evicted memory"
    assert sorted(m.text for m in memory.index) == ["note 0 about the harbour", "note 1 about the harbour"]
    memory.close()


def test_lenses_filter_a_query(tmp_path) -> None:
    lenses = {"work": {"tags": ["work"]}, "recent": {"sinceDays": 2, "layer": "episodic"}}
    _, memory = open_with(tmp_path, lenses=lenses)
    memory.remember("The quarterly report is due on Friday.", tags=("work",), time=stamp(NOW - 5 * DAY))
    memory.remember("The dentist appointment is on Friday.", tags=("home",), time=stamp(NOW - 1 * DAY))
    memory.remember("The report on the garden shed is due on Friday.", time=stamp(NOW - 1 * DAY))
    from mettaclaw.skills.memory import MemorySkills

    skills = MemorySkills(memory, lambda: stamp(NOW), 10, lenses=load_config([f"lenses={json.dumps(lenses)}"], env={}).lenses)
    everything = skills.query("what is due on Friday")
    assert "quarterly" in everything and "dentist" in everything
    work = skills.query("lens:work what is due on Friday")
    assert "quarterly" in work and "dentist" not in work and "garden" not in work
    recent = skills.query("lens:recent what is due on Friday")
    assert "quarterly" not in recent and "dentist" in recent
    with pytest.raises(SkillError, match="no lens named 'nope'; lenses: recent, work"):
        skills.query("lens:nope what")
    memory.close()


def test_an_evicted_turn_leaves_the_turn_log_too(tmp_path) -> None:
    from mettaclaw.messages import Message
    from mettaclaw.turns import read

    config, memory = open_with(tmp_path, scopePolicies={"user:bob": {"ttlDays": 10}})
    old = memory.record_turn(stamp(NOW - 30 * DAY), [Message("my locker code is 5150", who="bob", channel="irc:#c")], [])
    new = memory.record_turn(stamp(NOW - DAY), [Message("lunch at noon", who="bob", channel="irc:#c")], [])
    with open(memory.turn_log, "w", encoding="utf-8") as log:  # what the agent logged of those turns
        for n, (record, text) in enumerate([(old, "my locker code is 5150"), (new, "lunch at noon")]):
            log.write(json.dumps({"turn": n, "episode_id": record.turn_id, "messages": [{"text": text}]}) + "\n")
    memory.evict(config.scopePolicies, NOW)
    logged = list(read(memory.turn_log))
    assert "5150" not in memory.turn_log.read_text() and logged[0].get("forgotten")
    assert logged[1]["messages"][0]["text"] == "lunch at noon"
    memory.close()



def test_an_evicted_turn_takes_what_the_dream_distilled_from_it(tmp_path) -> None:
    """Retention erased old turns but kept the dream's facts and summaries that quote them, so their
    words were still found by `query` (forgetting the same turns retired them). Now eviction retires
    them as `forget` does."""
    from mettaclaw.messages import Message

    policies = load_config(['scopePolicies={"user:bob": {"ttlDays": 10}}'], env={}).scopePolicies
    _, memory = open_with(tmp_path)  # no retention in the dream itself: the dream distils first
    said = ["my locker code is 5150", "the blue van is parked at the harbour", "my locker code is 5150 at the gym"]
    for n in range(6):
        memory.record_turn(stamp(NOW - 30 * DAY + n * 60), [Message(said[n % 3], who="bob", channel="irc:#c")], [])
    memory.record_turn(stamp(NOW - DAY), [Message("lunch at noon", who="bob", channel="irc:#c")], [])
    memory.dreamer.dream("test")
    assert [r.kind for r in memory.semantic if "5150" in r.content], "the dream distilled the old turns"
    memory.evict(policies, NOW)
    assert [h.text for h in memory.query("locker code 5150", 10) if "5150" in h.text] == []
    assert [r.content for r in memory.semantic if "5150" in r.content and r.valid_to is None] == []
    assert [h.text for h in memory.query("lunch", 10)] == ["bob: lunch at noon"]
    memory.close()


def test_an_evicted_memory_leaves_its_turns_trace_record_and_log_line_and_a_restart_does_not_bring_it_back(
        make_agent, tmp_path) -> None:
    """Eviction dropped a memory's index row only: its text stayed in the `remember` of the turn that
    stored it (HISTORY, `episodes`, the export) and in that turn's log line, while an evicted episode
    was erased from both. It is deleted as `forget` deletes it; the turn that stored the memory kept
    stays, and the folder opened again (the index caught up from the trace) holds neither text twice."""
    from conftest import test_config

    policies = '{"agent": {"maxEntries": 1}}'
    agent, _, _, clock = make_agent(["remember the vault code is 4417", "remember the garden gate is green"],
                                    scopePolicies=policies, chromaMode="embedded")
    agent.turn()  # no message, only a memory skill: the turn itself is no entry of the scope
    clock.advance(3 * DAY)
    agent.turn()
    memory = agent.memory
    turn_log = agent.config.memory_path("turns.jsonl")
    assert "4417" in memory.trace.path.read_text() and "4417" in turn_log.read_text()
    gone = memory.evict(agent.config.scopePolicies, clock() + DAY)
    assert len(gone) == 1 and [m.text for m in memory.index] == ["the garden gate is green"]
    for said in (memory.trace.path.read_text(), turn_log.read_text(), *(e.text for e in memory.latest(10))):
        assert "4417" not in said, said
    assert "the garden gate is green" in memory.trace.path.read_text(), "the memory kept stays in its turn"
    agent.close()
    memory.close()
    again = open_memory(test_config(tmp_path / "memory", f"scopePolicies={policies}", "chromaMode=embedded"),
                        dream=False)
    try:
        assert [m.text for m in again.index] == ["the garden gate is green"]
        assert not again.query("vault code 4417", 5) and "4417" not in again.trace.path.read_text()
    finally:
        again.close()
