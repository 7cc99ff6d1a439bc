"""The dream's last step: decay, then prune, then cap (in that order), over the semantic layer.

Decay is exponential in the time since a record was last used (stored, reinforced or recalled):
strength = strength_at_last_use * 0.5 ** (idle / half_life), with half-lives of about 7 days for
episode-level records (kind `summary`) and 30 days for facts, concepts and themes. Each run decays by
the idle time since the later of the last use and the previous run, so running it twice a day or once
a week gives the same strength; the run and its timestamp commit in one transaction, so a crash can
never decay a record twice. Association edges decay through the semantic graph's own rule.

Pruning drops records whose strength fell under a floor; capping then drops the least valuable
(confidence, strength, access frequency) until the layer fits. Neither ever touches a current fact
that was reinforced (confirmed at least twice) nor a closed version (history is kept).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from mettaclaw.memory.semantic.graph import DAY, decay_edges

HALF_LIFE_DAYS = {"summary": 7.0, "fact": 30.0, "concept": 30.0, "theme": 30.0}
LAST_RUN_KEY = "dream.last_consolidated"


@dataclass(frozen=True)
class Policy:
    half_life_days: dict[str, float] = field(default_factory=lambda: dict(HALF_LIFE_DAYS))
    prune_below: float = 0.05
    max_records: int | None = 100_000


@dataclass
class Consolidation:
    decayed: int = 0
    pruned: list[str] = field(default_factory=list)
    capped: list[str] = field(default_factory=list)
    protected_over_cap: int = 0
    edges_decayed: int = 0
    edges_pruned: int = 0


def decay_factor(idle_seconds: float, half_life_days: float) -> float:
    return 0.5 ** (max(0.0, idle_seconds) / (half_life_days * DAY))


def last_use(rec: Any) -> float:
    return max([rec.recorded_at, rec.last_updated, *rec.access_times])


def confirmations(rec: Any) -> int:
    """How often a record was confirmed: its reinforcements, or for a fact or concept the episodes
    that said it (one write may carry several). A summary's episodes are what it compresses, not
    confirmations."""
    if rec.kind == "summary":
        return rec.reinforcements
    return max(rec.reinforcements, len(set(rec.source_episodes)))


def protected(rec: Any) -> bool:
    """A current record confirmed more than once, or any closed version, is never dropped here."""
    return not rec.current or confirmations(rec) >= 2


def keep_score(rec: Any, now: float) -> float:
    """What capping keeps: confidence, relevance (current strength) and how often it was recalled."""
    frequency = min(1.0, math.log1p(len(rec.access_times)) / math.log(21))
    return 0.4 * rec.confidence + 0.35 * rec.strength + 0.25 * frequency


def consolidate(semantic: Any, now: float, policy: Policy | None = None) -> Consolidation:
    policy = policy or Policy()
    store = semantic.records
    out = Consolidation()
    previous = store.get_meta(LAST_RUN_KEY)
    since = float(previous) if previous else None
    with store.transaction():  # decay and its timestamp are one write: never applied twice
        for rec in store.iter_records():
            if not rec.current:
                continue
            start = last_use(rec) if since is None else max(last_use(rec), since)
            factor = decay_factor(now - start, policy.half_life_days.get(rec.kind, 30.0))
            if factor < 1.0:
                rec.strength *= factor
                store.put(rec, reindex=False)
                out.decayed += 1
        store.set_meta(LAST_RUN_KEY, repr(now))
    out.edges_decayed, out.edges_pruned = decay_edges(store, now)
    candidates = [r for r in store.iter_records() if not protected(r)]
    for rec in candidates:
        if rec.strength < policy.prune_below and semantic.remove(rec.id):
            out.pruned.append(rec.id)
    if policy.max_records is not None:
        excess = store.count(current_only=True) - policy.max_records
        if excess > 0:
            pruned = set(out.pruned)
            ranked = sorted((r for r in candidates if r.id not in pruned), key=lambda r: keep_score(r, now))
            for rec in ranked[:excess]:
                if semantic.remove(rec.id):
                    out.capped.append(rec.id)
            out.protected_over_cap = max(0, excess - len(out.capped))
    return out
