"""Repeated action/outcome pairs become concepts with edges to their episodes; the 3+ and 8+ gates."""

from __future__ import annotations

import math

import pytest

from mettaclaw.memory.dream import Dreamer, ListSource
from mettaclaw.memory.dream.episodes import DreamEpisode, outcome_of
from mettaclaw.memory.dream.patterns import judge, key, observe, timing_cv
from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore

T0 = 1_800_000_000.0
HOUR = 3600.0


def episodes(times, action="water_plants", outcome="success", prefix="ep"):
    return [DreamEpisode(f"{prefix}-{i}", t, f"Watered the plants, round {i}.", (action,), outcome)
            for i, t in enumerate(times)]


def dreamer(tmp_path, eps):
    sem = SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), InMemorySemanticStore(), clock=lambda: T0 + 90 * 86400)
    return sem, Dreamer(sem, ListSource(eps), sem.embedder, tmp_path / "s.json", extract_concepts=False)


def pattern_concepts(sem):
    return [r for r in sem if r.category == "operational_pattern"]


def test_three_observations_make_a_concept_with_edges_to_exactly_those_episodes(tmp_path):
    eps = episodes([T0, T0 + 5 * HOUR, T0 + 30 * HOUR])
    sem, d = dreamer(tmp_path, eps)
    report = d.dream()
    [concept] = pattern_concepts(sem)
    assert concept.kind == "concept" and concept.name == "pattern water_plants success"
    assert sorted(concept.source_episodes) == ["ep-0", "ep-1", "ep-2"]
    assert {"action", "success", "action_type:water_plants"} <= set(concept.tags)
    edges = sem.records.edges_of(concept.id)
    derived = sorted(e.dst for e in edges if e.type == "DERIVED_FROM" and e.src == concept.id)
    assert derived == ["ep-0", "ep-1", "ep-2"] and all(e.dst_layer == "episodic" for e in edges if e.type == "DERIVED_FROM")
    assert report.patterns_promoted == ["water_plants -> success"]


def test_two_observations_are_not_a_pattern_and_a_later_third_promotes_it(tmp_path):
    source = ListSource(episodes([T0, T0 + HOUR]))
    sem = SemanticMemory(HashEmbedder(256), InMemoryVectorStore(), InMemorySemanticStore(), clock=lambda: T0)
    d = Dreamer(sem, source, sem.embedder, tmp_path / "s.json", extract_concepts=False)
    d.dream()
    assert pattern_concepts(sem) == []
    source.extend(episodes([T0 + 2 * HOUR], prefix="late"))
    d.dream()  # observations accumulate across dreams in the dream state
    [concept] = pattern_concepts(sem)
    assert sorted(concept.source_episodes) == ["ep-0", "ep-1", "late-0"]


def test_different_outcomes_are_different_patterns():
    tally: dict = {}
    observe(tally, episodes([T0, T0 + 1, T0 + 2]) + episodes([T0 + 3], outcome=outcome_of("disk full: /tmp"), prefix="x"))
    assert len(tally[key("water_plants", "success")]) == 3
    assert tally[key("water_plants", "error: disk full /tmp")][0][0] == "x-0"
    assert not judge(key("water_plants", "error: disk full /tmp"), tally[key("water_plants", "error: disk full /tmp")]).promoted


def test_eight_or_more_with_random_timing_are_rejected(tmp_path):
    n = 12  # gaps at the quantiles of an exponential: the timing of a Poisson process, CV near 1
    gaps = [-math.log(1 - (i + 0.5) / n) * 10 * HOUR for i in (3, 9, 0, 11, 5, 1, 7, 10, 2, 8, 4, 6)]
    times = [T0 + sum(gaps[:i]) for i in range(n)]
    assert abs(timing_cv(times) - 1.0) <= 1 / math.sqrt(n - 1)
    sem, d = dreamer(tmp_path, episodes(times))
    report = d.dream()
    assert pattern_concepts(sem) == []
    assert report.patterns_rejected and "timing looks random" in report.patterns_rejected[0]


def test_a_pattern_rejected_in_every_batch_of_a_dream_is_listed_once(tmp_path):
    n = 36  # Poisson-like gaps (exponential quantiles, shuffled): rejected again after each batch
    gaps = [-math.log(1 - ((7 * i) % n + 0.5) / n) * 10 * HOUR for i in range(n)]
    times = [T0 + sum(gaps[:i]) for i in range(n)]
    sem, d = dreamer(tmp_path, episodes(times))
    d.batch_size = n // 3
    report = d.dream()
    assert report.batches == 3
    assert report.patterns_rejected == [r for r in report.patterns_rejected if r.startswith("water_plants -> success (")]
    assert len(report.patterns_rejected) == 1


@pytest.mark.parametrize("times", [
    [T0 + day * 86400 for day in range(10)],  # a daily habit: gaps all alike (CV 0)
    [T0 + i * 60 for i in range(9)] + [T0 + 30 * 86400 + i * 60 for i in range(9)],  # two bursts (CV >> 1)
])
def test_eight_or_more_with_regular_or_bursty_timing_are_promoted(tmp_path, times):
    sem, d = dreamer(tmp_path, episodes(times))
    d.dream()
    [concept] = pattern_concepts(sem)
    assert len(concept.source_episodes) == len(times)


def test_timing_cv_is_undefined_for_too_few_or_simultaneous_observations():
    assert timing_cv([T0, T0 + 1]) is None
    assert timing_cv([T0, T0, T0]) is None
    assert timing_cv([T0, T0 + 10, T0 + 20]) == 0.0


def test_a_long_habit_cites_a_bounded_sample_of_its_episodes(tmp_path):
    from mettaclaw.memory.dream.patterns import MAX_CITED

    times = [T0 + day * 86400 for day in range(MAX_CITED + 15)]
    sem, d = dreamer(tmp_path, episodes(times))
    d.batch_size = 20  # several dreams' worth of batches
    d.dream()
    [concept] = pattern_concepts(sem)
    assert len(concept.source_episodes) == MAX_CITED
    assert concept.source_episodes == [f"ep-{i}" for i in range(MAX_CITED)]
    assert concept.reinforcements >= 4  # later batches still confirm it


def test_invented_skills_and_error_texts_do_not_grow_the_tally_without_bound():
    """A model that writes a new skill name or gets a new error every turn (10,000 turns of it) left a
    2.4 MB dream state that was rewritten after every turn, slowing each turn; the tally is capped and
    keeps the patterns that have evidence."""
    from mettaclaw.memory.dream.patterns import MAX_PATTERNS

    tally: dict = {}
    real = [DreamEpisode(f"ep-{n}", float(n), "ran the build", ("shell",), "success") for n in range(5)]
    observe(tally, real)
    noise = [DreamEpisode(f"ep-{100 + n}", 100.0 + n, "x", (f"made-up-skill-{n}",), f"error: unknown skill {n}")
             for n in range(10_000)]
    observe(tally, noise)
    assert len(tally) == MAX_PATTERNS
    assert len(tally[key("shell", "success")]) == 5, "a pattern with evidence outlives the noise"


def test_the_concept_mark_is_saved_at_most_every_few_seconds(tmp_path, monkeypatch):
    import mettaclaw.memory.dream.runner as runner

    saves = []
    monkeypatch.setattr(runner, "save_state", lambda path, state: saves.append(state.concept_mark))
    source = ListSource()
    dreamer = Dreamer(SemanticMemory(HashEmbedder(), InMemoryVectorStore(), InMemorySemanticStore()), source,
                      HashEmbedder(), tmp_path / "state.json")
    for n in range(50):
        source.extend([DreamEpisode(f"ep-{n}", float(n), f"Alice fed the cat {n}")])
        dreamer.extract_pending()
    assert 1 <= len(saves) <= 2, "not one whole-state rewrite per turn"
    dreamer.stop()
    assert saves[-1] == 50, "stopping saves the newest mark"
