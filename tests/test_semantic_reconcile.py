"""Writing through reconciliation: dedup, reinforcement, merge, supersede, history, idempotence."""

import math

import pytest

from mettaclaw.memory.errors import EmbedderMismatch
from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
from mettaclaw.memory.semantic.factgen import HARD_PAIRS, HELD_OUT_PAIRS, contradicting_pairs, unrelated_pairs
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore

DAY = 86400.0


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def make_memory(clock=None, store=None) -> SemanticMemory:
    return SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), store or InMemorySemanticStore(),
                          clock=clock or Clock())


PARAPHRASES = [
    ["Alice lives in Paris", "alice lives in paris.", "Alice resides in Paris", "Paris is where Alice lives",
     "ALICE LIVES IN PARIS!"],
    ["Bob works at Acme", "Bob is employed by Acme", "Bob works for Acme", "Acme is where Bob works"],
    ["Carol's favourite colour is green", "Carol's favorite color is green", "The favourite colour of Carol is green"],
    ["The office coffee machine needs descaling every month", "Every month the office coffee machine needs descaling",
     "the office coffee machine needs descaling every month.",
     "The office coffee machine needs to be descaled every month"],
    ["Backups of the project server run nightly at 2am", "The project server backups run nightly at 2am",
     "Nightly at 2am, backups of the project server run"],
]


def test_paraphrases_of_five_facts_are_five_records():
    mem = make_memory()
    for group in PARAPHRASES:
        for sentence in group:
            mem.learn(sentence)
    records = list(mem)
    assert len(records) == 5
    by_count = sorted(r.reinforcements for r in records)
    assert by_count == sorted(len(g) for g in PARAPHRASES)
    for rec in records:
        assert rec.confidence == pytest.approx(min(0.99, 0.5 + 0.1 * math.sqrt(rec.reinforcements)))


def test_same_fact_twice_is_one_record_reinforced_and_a_replayed_episode_is_idempotent():
    mem = make_memory()
    first = mem.learn("Dana plays the cello", source_episodes=["ep-0"])
    again = mem.learn("Dana plays the cello", source_episodes=["ep-0"])
    assert again.id == first.id and again.duplicate
    assert mem.get(first.id).reinforcements == 1
    third = mem.learn("Dana plays the cello.", source_episodes=["ep-120"])
    assert third.action == "reinforced" and not third.duplicate
    rec = mem.get(first.id)
    assert rec.reinforcements == 2 and rec.source_episodes == ["ep-0", "ep-120"] and len(mem) == 1


def test_reinforcements_count_confirming_episodes_not_writes():
    mem = make_memory()
    rid = mem.learn("Erin walks to work", source_episodes=["ep-1", "ep-2"]).id
    assert mem.get(rid).reinforcements == 2  # one write, two episodes said it
    mem.learn("Erin walks to work.", source_episodes=["ep-2", "ep-3", "ep-4"])  # two of them new
    assert mem.get(rid).reinforcements == 4
    mem.learn("Erin walks to work", source_episodes=["ep-3"], tags=["commute"])  # known episode, new tag
    rec = mem.get(rid)
    assert rec.reinforcements == 4 and "commute" in rec.tags
    assert rec.confidence == pytest.approx(0.5 + 0.1 * math.sqrt(4))
    summary = mem.learn("We painted the fence and then cleaned the brushes", kind="summary",
                        source_episodes=["ep-7", "ep-8", "ep-9"]).id
    assert mem.get(summary).reinforcements == 1  # what a summary compresses is not a confirmation


def test_a_newer_statement_updates_the_properties_it_names():
    mem = make_memory()
    rid = mem.learn("Frank owns a red bicycle", properties={"colour": "red", "gears": "3"}).id
    mem.learn("Frank owns a red bicycle", properties={"gears": "21"})
    assert mem.get(rid).properties == {"colour": "red", "gears": "21"}


def test_a_contradiction_supersedes_and_as_of_still_sees_the_old_fact():
    clock = Clock()
    mem = make_memory(clock)
    old = mem.learn("Alice lives in Paris")
    before_change = clock.now + 0.5
    clock.now += 10 * DAY
    new = mem.learn("Alice moved to Berlin")
    assert new.action == "superseded" and new.superseded == [old.id]
    closed = mem.get(old.id)
    assert closed is not None and closed.valid_to is not None and closed.superseded_by == new.id
    assert len(mem) == 2  # nothing deleted
    now_hits = [h.record.content for h in mem.recall("where does Alice live")]
    assert "Alice moved to Berlin" in now_hits and "Alice lives in Paris" not in now_hits
    then_hits = [h.record.content for h in mem.recall("where does Alice live", as_of=before_change)]
    assert then_hits == ["Alice lives in Paris"]
    assert [r.content for r in mem.history("Alice moved to Berlin")] == ["Alice lives in Paris", "Alice moved to Berlin"]


def test_a_new_time_for_the_same_plan_supersedes_the_old_one_and_other_plans_stay_current():
    """Before, "my flight is at 7am" was the attribute `flight` with the object "at 7am", a relation of
    many values: the 9am statement stood beside it, and recall showed both times as current."""
    clock = Clock()
    mem = make_memory(clock)
    flight = mem.learn("My flight is at 7am")
    meeting = mem.learn("My meeting is at 9am")
    before_change = clock.now + 0.5
    clock.now += 2 * DAY
    moved = mem.learn("My flight is now at 9am on Friday")
    assert moved.action == "superseded" and moved.superseded == [flight.id]
    assert mem.get(meeting.id).current, "a plan of another subject at the new time is no old version"
    current = {r.content for r in mem if r.current}
    assert current == {"My meeting is at 9am", "My flight is now at 9am on Friday"}
    then = [h.record.content for h in mem.recall("when is my flight", as_of=before_change)]
    assert "My flight is at 7am" in then and "My flight is now at 9am on Friday" not in then
    assert mem.learn("My flight is at gate 12").action == "created", "a gate is no time: it replaces none"
    assert mem.get(moved.id).current


def test_a_plans_time_said_with_a_verb_supersedes_the_old_time_and_other_plans_stay_current():
    """Before, "my flight leaves at 7am" and "my flight got moved to 9am" (or "... now leaves at 9am")
    were both current: a verb's object was one of many values, and "moved to" read as where one lives."""
    clock = Clock()
    mem = make_memory(clock)
    flight = mem.learn("My flight leaves at 7am")
    meeting = mem.learn("My meeting is at 9am")
    clock.now += DAY
    moved = mem.learn("My flight got moved to 9am")
    assert moved.action == "superseded" and moved.superseded == [flight.id]
    assert mem.get(meeting.id).current, "a plan of another subject at the new time is no old version"
    again = mem.learn("My flight now leaves at 10am")
    assert again.action == "superseded" and again.superseded == [moved.id]
    lands = mem.learn("My flight lands at 1pm")  # when it ends is another time of it
    assert lands.action == "created" and mem.get(again.id).current
    assert {r.content for r in mem if r.current} == {"My meeting is at 9am", "My flight now leaves at 10am",
                                                     "My flight lands at 1pm"}


SCHEDULE_NEAR_MISSES = [
    ("My flight leaves at 7am", "My flight lands at 11am"),
    ("My flight leaves at 7am", "My flight leaves from gate 12"),
    ("My flight leaves at 7am", "My train leaves at 9am"),
    ("My flight leaves at 7am", "My flight leaves at 7am on Friday"),
    ("Sam's flight leaves at 7am", "Ana's flight leaves at 9am"),
    ("The shop opens at 9am", "The shop closes at 5pm"),
    ("My shift starts at 9am", "My shift ends at 5pm"),
    ("The meeting starts at 3pm", "The meeting got moved to room 4"),
    ("The meeting is at 3pm", "The meeting got moved to the main office"),
    ("Sam leaves at 7am", "Sam leaves at 9am"),
]


def test_a_plans_time_said_with_a_verb_replaces_no_other_time_and_no_other_plan():
    superseded = []
    for old, new in SCHEDULE_NEAR_MISSES:
        mem = make_memory()
        mem.learn(old)
        if mem.learn(new).action == "superseded":
            superseded.append((old, new))
    assert superseded == []


def test_negation_closes_the_fact_it_denies():
    mem = make_memory()
    old = mem.learn("Alice works at Initech")
    res = mem.learn("Alice no longer works at Initech")
    assert res.action == "superseded" and res.superseded == [old.id]


def test_i_dont_closes_what_i_said_before():
    """"I don't live in Paris anymore" was read as "user dons't live ...": no triple, so both stayed current."""
    mem = make_memory()
    old = mem.learn("I live in Paris")
    res = mem.learn("I don't live in Paris anymore")
    assert res.action == "superseded" and res.superseded == [old.id]


def test_an_older_value_learned_late_becomes_history_not_current():
    clock = Clock()
    mem = make_memory(clock)
    current = mem.learn("Erin lives in Oslo")
    res = mem.learn("Erin lives in Lima", valid_from=clock.now - 365 * DAY)
    past = mem.get(res.id)
    assert res.action == "created" and not past.current and past.superseded_by == current.id
    assert mem.get(current.id).current


def test_a_refined_object_merges_instead_of_superseding():
    mem = make_memory()
    first = mem.learn("Alice lives in Berlin")
    res = mem.learn("Alice lives in Berlin since 2019")
    assert res.action == "merged" and res.superseded == [first.id]
    assert mem.get(res.id).content == "Alice lives in Berlin since 2019"


def test_a_merge_that_rewords_a_fact_keeps_the_old_text_as_history():
    """The merged text was rewritten in place, so `as_of` a time before the merge showed the later,
    more specific text, which nobody had said then."""
    clock = Clock()
    mem = make_memory(clock)
    first = mem.learn("Alice lives in Berlin", source_episodes=["ep-1"])
    between = clock.now + 0.5
    clock.now += DAY
    res = mem.learn("Alice lives in Berlin since 2019", source_episodes=["ep-2"])
    assert res.action == "merged" and res.superseded == [first.id]
    then = [h.record.content for h in mem.recall("where does Alice live", as_of=between)]
    assert then == ["Alice lives in Berlin"]
    now = [h.record for h in mem.recall("where does Alice live")]
    assert [r.content for r in now] == ["Alice lives in Berlin since 2019"] and now[0].id == res.id
    assert [r.id for r in mem if r.current] == [res.id], "one current version, not a duplicate"
    merged, closed = mem.get(res.id), mem.get(first.id)
    assert merged.source_episodes == ["ep-1", "ep-2"] and merged.reinforcements == 2, "provenance merged"
    assert closed.content == "Alice lives in Berlin" and closed.superseded_by == res.id
    assert [r.content for r in mem.history(res.id)] == ["Alice lives in Berlin", "Alice lives in Berlin since 2019"]


def test_a_merge_that_keeps_the_old_text_makes_no_new_version():
    mem = make_memory()
    first = mem.learn("Alice lives in Berlin since 2019")
    res = mem.learn("Alice lives in Berlin")
    assert res.action == "merged" and res.id == first.id and res.superseded == []
    assert len(mem) == 1 and mem.get(first.id).reinforcements == 2


def test_other_subjects_are_not_merged_however_close_the_vectors():
    mem = make_memory()
    a = mem.learn("Alice lives in Paris")
    b = mem.learn("Bob lives in Paris")
    c = mem.learn("The server room is on floor 3")
    d = mem.learn("The server room is on floor 4")  # numbers differ: a different fact, not a paraphrase
    assert len({a.id, b.id, c.id, d.id}) == 4


def test_merge_keeps_the_more_specific_text_and_both_provenances():
    mem = make_memory()
    first = mem.learn("The office coffee machine needs descaling every month", source_episodes=["ep-1"])
    res = mem.learn("The office coffee machine needs to be descaled every month", source_episodes=["ep-9"])
    assert res.action == "merged" and res.id == first.id
    rec = mem.get(first.id)
    assert rec.source_episodes == ["ep-1", "ep-9"] and rec.reinforcements == 2


def test_concepts_are_found_by_normalised_name():
    mem = make_memory()
    a = mem.learn("a container for hot drinks", name="coffee_mug", kind="concept")
    b = mem.learn("a ceramic container for hot drinks with a handle", name="Coffee Mug", kind="concept")
    assert b.action == "merged" and b.superseded == [a.id]
    assert mem.get(b.id).content == "a ceramic container for hot drinks with a handle"


def test_supersede_history_and_forget_every_version_by_name():
    mem = make_memory()
    first = mem.learn("a small cup", name="espresso cup", kind="concept")
    res = mem.supersede("espresso cup", "a small cup of about 60 ml")
    assert res.superseded == [first.id]
    assert [r.current for r in mem.history("espresso cup")] == [False, True]
    with pytest.raises(ValueError, match="already superseded"):
        mem.supersede(first.id, "anything")
    assert set(mem.forget(res.id)) == {res.id, first.id}, "forgetting deletes every version, not only the current"
    assert mem.get(res.id) is None and mem.get(first.id) is None
    assert mem.changes(first.id) == [] and mem.changes(res.id) == [], "and the write log that quoted them"


def test_false_supersede_rate_on_generated_unrelated_facts():
    """Each pair alone, and all statements in one store: unrelated facts must not supersede."""
    pairs = unrelated_pairs()
    false = sum(1 for a, b, _ in pairs if (m := make_memory()).learn(a) and m.learn(b).action == "superseded")
    mem = make_memory()
    statements = list(dict.fromkeys(s for a, b, _ in pairs for s in (a, b)))
    false_one_store = sum(1 for s in statements if mem.learn(s).action == "superseded")
    rate, rate_store = false / len(pairs), false_one_store / len(statements)
    print(f"false-supersede: {false}/{len(pairs)} pairs = {rate:.2%}; "
          f"one store: {false_one_store}/{len(statements)} = {rate_store:.2%}")
    assert len(pairs) >= 500
    assert rate <= 0.01 and rate_store <= 0.01


def test_hand_written_near_misses():
    """Harder, freely phrased pairs; reported, with bounds at the measured level to catch regressions."""
    def supersedes(a, b):
        m = make_memory()
        m.learn(a)
        return m.learn(b).action == "superseded"

    hard = sum(supersedes(a, b) for a, b in HARD_PAIRS)
    held = sum(supersedes(a, b) for a, b in HELD_OUT_PAIRS)
    print(f"near misses superseded: tuning set {hard}/{len(HARD_PAIRS)}, held-out set {held}/{len(HELD_OUT_PAIRS)}")
    assert hard <= 1 and held <= 3


def test_true_contradictions_are_detected():
    pairs = contradicting_pairs()
    hits = sum(1 for a, b, _ in pairs if (m := make_memory()).learn(a) and m.learn(b).action == "superseded")
    print(f"contradictions detected: {hits}/{len(pairs)}")
    assert hits / len(pairs) >= 0.95


@pytest.mark.parametrize("kwargs, message", [
    ({"content": "  "}, "empty"),
    ({"content": "x" * 5000}, "at most"),
    ({"content": "a fact", "kind": "opinion"}, "kind"),
    ({"content": "a fact", "provenance": "rumour"}, "provenance"),
    ({"content": "a fact", "confidence": 1.5}, "confidence"),
    ({"content": "a fact", "valid_from": "next tuesday"}, "not a time"),
    ({"content": "a fact", "atom": "(lives_in alice"}, "unbalanced"),
])
def test_bad_input_is_refused_and_loses_nothing(kwargs, message):
    mem = make_memory()
    kept = mem.learn("Alice lives in Paris")
    with pytest.raises(ValueError, match=message):
        mem.learn(**kwargs)
    assert len(mem) == 1 and mem.get(kept.id).current


def test_capture_and_delete_callbacks():
    mem = make_memory()
    captured, deleted = [], []
    mem.on_capture(lambda rid, rec: captured.append(rid))
    mem.on_delete(lambda rid, rec: deleted.append(rid))
    mem.on_capture(lambda rid, rec: 1 / 0)  # a broken listener must not break the write
    res = mem.learn("Frank owns a boat")
    mem.learn("Frank owns a boat")  # a reinforcement changes the record: announced again
    assert captured == [res.id, res.id]
    assert mem.remove(res.id) and deleted == [res.id]
    assert not mem.remove(res.id)


def test_a_store_made_by_another_embedder_is_refused():
    store = InMemorySemanticStore()
    SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), store)
    with pytest.raises(EmbedderMismatch, match="embedder"):
        SemanticMemory(HashEmbedder(64), InMemoryVectorStore(), store)


def test_atom_with_truth_value_from_inference_sets_confidence():
    mem = make_memory()
    res = mem.learn("Grace lives in Rome", atom="(lives_in grace rome) (stv 1 0.8)", provenance="agent_inference")
    rec = mem.get(res.id)
    assert rec.truth == (1.0, 0.8) and rec.confidence == 0.8 and rec.confidence_set
    again = mem.learn("Grace moved to Vienna")
    assert again.superseded == [res.id]
