"""Recurring action/outcome patterns -> concepts with DERIVED_FROM edges to the episodes they came from.

A pattern is (action, outcome): the skill the agent used and how the episode ended. It is promoted
once seen at least `MIN_OBSERVATIONS` (3) times. From `TIMING_GATE` (8) observations on, its timing is
tested too: when the gaps between observations look like a Poisson process (coefficient of variation
close to 1, within one standard error 1/sqrt(gaps)), the pattern is judged coincidental and not
promoted: a regular habit (CV well below 1) or a burst within one task (CV well above 1) passes.
Observations accumulate across dreams in the dream state, so a habit spread over weeks still counts.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .episodes import DreamEpisode

MIN_OBSERVATIONS = 3
TIMING_GATE = 8
MAX_KEPT = 200  # observations remembered a pattern (the newest)
MAX_PATTERNS = 1000  # (action, outcome) pairs tallied; past it the least promising, oldest go first
MAX_CITED = 50  # episodes a pattern concept cites: a sample of its evidence, not all of it (every
# confirmation re-reads the co-occurrence of all cited episodes, so an uncapped habit would cost
# more each day); later observations still confirm the concept, without a new citation


@dataclass
class PatternVerdict:
    action: str
    outcome: str
    episodes: list[str]
    promoted: bool
    reason: str
    cv: float | None = None

    @property
    def name(self) -> str:
        return f"{self.action} -> {self.outcome}"


def key(action: str, outcome: str) -> str:
    return f"{action}\t{outcome}"


def observe(tally: dict[str, list[list[Any]]], episodes: Iterable[DreamEpisode]) -> set[str]:
    """Add each (action, outcome) of the episodes to the tally {key: [[episode id, time], ...]};
    returns the keys that changed. Re-observing an episode (a resumed dream) changes nothing."""
    changed = set()
    for ep in episodes:
        if not ep.actions or ep.outcome is None:
            continue
        for action in dict.fromkeys(ep.actions):
            k = key(action, ep.outcome)
            seen = tally.setdefault(k, [])
            if any(obs[0] == ep.id for obs in seen):
                continue
            seen.append([ep.id, ep.time])
            del seen[:-MAX_KEPT]
            changed.add(k)
    if len(tally) > MAX_PATTERNS:  # a model that invents skill names or error texts must not grow the state
        unpromising_first = sorted(tally, key=lambda k: (len(tally[k]) >= MIN_OBSERVATIONS, float(tally[k][-1][1])))
        for k in unpromising_first[: len(tally) - MAX_PATTERNS]:
            del tally[k]
            changed.discard(k)
    return changed


def timing_cv(times: list[float]) -> float | None:
    """Coefficient of variation of the gaps between observations (None when undefined)."""
    ordered = sorted(times)
    gaps = [b - a for a, b in zip(ordered, ordered[1:], strict=False)]
    if len(gaps) < 2:
        return None
    mean = statistics.fmean(gaps)
    return None if mean <= 0 else statistics.pstdev(gaps) / mean


def judge(k: str, observations: list[list[Any]]) -> PatternVerdict:
    action, outcome = k.split("\t", 1)
    episodes = [str(o[0]) for o in observations]
    n = len(observations)
    if n < MIN_OBSERVATIONS:
        return PatternVerdict(action, outcome, episodes, False, f"seen {n} times (< {MIN_OBSERVATIONS})")
    if n < TIMING_GATE:
        return PatternVerdict(action, outcome, episodes, True, f"seen {n} times")
    cv = timing_cv([float(o[1]) for o in observations])
    if cv is not None and abs(cv - 1.0) <= 1.0 / math.sqrt(n - 1):
        return PatternVerdict(action, outcome, episodes, False, f"timing looks random (CV {cv:.2f})", cv)
    return PatternVerdict(action, outcome, episodes, True, f"seen {n} times, timing not random", cv)


def promote(semantic: Any, verdict: PatternVerdict, episodes: list[str], cited: int = 0) -> Any:
    """Find-or-create the pattern's concept through reconciliation, confirmed by the observations not
    yet counted; up to MAX_CITED of them (`cited` so far) become DERIVED_FROM edges."""
    episodes = episodes[: max(0, MAX_CITED - cited)]
    success = verdict.outcome == "success"
    return semantic.learn(
        f"doing {verdict.action} leads to {verdict.outcome}", name=f"pattern {verdict.action} {verdict.outcome}",
        kind="concept", category="operational_pattern", source_episodes=episodes,
        tags=("pattern", "action", f"action_type:{verdict.action}", "success" if success else "failure"),
        provenance="episodic_consolidation", properties={"action": verdict.action, "outcome": verdict.outcome})


def learn_confirmed(semantic: Any, state: Any, batch: Iterable[DreamEpisode], report: Any, lock: Any) -> None:
    """Tally a batch's (action, outcome) pairs in the dream state and promote each pattern that passes
    `judge`, confirmed by its observations not yet counted (each then marked counted), writing under
    the memory's `lock`; the report lists what was promoted and what was rejected."""
    changed = observe(state.patterns, batch)
    for gone in set(state.pattern_cited) - set(state.patterns):
        del state.pattern_cited[gone]
    for k in sorted(changed):
        verdict = judge(k, state.patterns[k])
        if verdict.promoted:
            seen = state.patterns[k]
            fresh = [obs for obs in seen if len(obs) < 3]  # [id, time] -> [id, time, True] once counted
            if fresh:
                cited = state.pattern_cited.get(k, 0)
                with lock:
                    result = promote(semantic, verdict, [str(o[0]) for o in fresh], cited)
                state.pattern_cited[k] = min(MAX_CITED, cited + len(fresh))
                report.record(result)
                for obs in fresh:
                    obs.append(True)
                if verdict.name not in report.patterns_promoted:
                    report.patterns_promoted.append(verdict.name)
        elif len(verdict.episodes) >= MIN_OBSERVATIONS:  # once a pattern, with its latest reason
            report.patterns_rejected[:] = [r for r in report.patterns_rejected if not r.startswith(f"{verdict.name} (")]
            report.patterns_rejected.append(f"{verdict.name} ({verdict.reason})")
