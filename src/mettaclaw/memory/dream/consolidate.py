"""The dream's last step: decay, then prune, then cap (in that order), over the semantic layer.

Decay is exponential in the time since a record was last used (stored, reinforced or recalled):
strength = strength_at_last_use * 0.5 ** (idle / half_life), with half-lives of about 7 days for
episode-level records (kind `summary`) and 30 days for facts, concepts and themes. Each run decays by
the idle time since the later of the last use and the previous run, so running it twice a day or once
a week gives the same strength. The run's stamp is written first, so a crash can never decay a record
twice (it leaves the rest under-decayed for one interval). The memory's lock is held a chunk of
records at a time. Association edges decay through the semantic graph's own rule.

Pruning drops records whose strength fell under a floor; capping then drops the least valuable
(confidence, strength, access frequency) until the layer fits. Neither ever touches a current fact
that was reinforced (confirmed at least twice), a closed version, nor the current version its
closed versions lead to (history is kept, whole).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Any

from mettaclaw.memory.semantic.graph import DAY, decay_edges

from .themes import THEME_TAG

HALF_LIFE_DAYS = {"summary": 7.0, "fact": 30.0, "concept": 30.0, "theme": 30.0}
CHUNK = 500  # records decayed under one hold of the memory's lock
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


def half_life_days(rec: Any, policy: Policy) -> float:
    """A record's half-life: a theme (a `summary` record tagged `theme`, rebuilt while its participant
    talks) lives as long as a concept; a batch summary, about its episodes, as briefly as they do."""
    kind = "theme" if THEME_TAG in rec.tags else rec.kind
    return policy.half_life_days.get(kind, 30.0)


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


def heads_history(store: Any, rec: Any) -> bool:
    """Whether `rec` is the current version of a fact that has closed versions: they stay (history is
    kept) and name it as what superseded them, so dropping it left them pointing at nothing (and
    `supersede` of an old version sent the model to a record that was gone)."""
    return bool(rec.current and rec.lineage) and len(store.by_lineage(rec.lineage)) > 1


def keep_score(rec: Any, now: float) -> float:
    """What capping keeps: confidence, relevance (current strength) and how often it was recalled."""
    frequency = min(1.0, math.log1p(len(rec.access_times)) / math.log(21))
    return 0.4 * rec.confidence + 0.35 * rec.strength + 0.25 * frequency


def consolidate(semantic: Any, now: float, policy: Policy | None = None, lock: Any = None,
                chunk: int = CHUNK) -> Consolidation:
    """Decay, prune, cap. `lock` (the memory's write lock) is taken a chunk of records at a time, so
    an agent turn waits for at most one chunk, never for a pass over the whole layer (seconds at
    20,000 records: docs/decisions/0017)."""
    policy = policy or Policy()
    store = semantic.records
    lock = lock if lock is not None else contextlib.nullcontext()
    out = Consolidation()
    with lock, store.transaction():
        semantic.apply_touches()  # decay counts from a record's last use, the uses reads noted included
        previous = store.get_meta(LAST_RUN_KEY)
        # stamped first: a crash part-way leaves the rest under-decayed for one interval, never twice decayed
        store.set_meta(LAST_RUN_KEY, repr(now))
        ids = store.ids()
    since = float(previous) if previous else None
    kept: list[tuple[float, str]] = []  # (keep score, id) of what pruning may drop, for the cap
    for start in range(0, len(ids), chunk):
        with lock, store.transaction():
            for rec in store.get_many(ids[start : start + chunk]):
                if not rec.current:
                    continue
                begin = last_use(rec) if since is None else max(last_use(rec), since)
                factor = decay_factor(now - begin, half_life_days(rec, policy))
                if factor < 1.0:
                    rec.strength *= factor
                    store.put(rec, reindex=False)
                    out.decayed += 1
                if protected(rec):
                    continue
                if rec.strength < policy.prune_below and not heads_history(store, rec) and semantic.remove(rec.id):
                    out.pruned.append(rec.id)
                else:
                    kept.append((keep_score(rec, now), rec.id))
    with lock:
        out.edges_decayed, out.edges_pruned = decay_edges(store, now)
    if policy.max_records is not None:
        with lock:
            excess = store.count(current_only=True) - policy.max_records
        if excess > 0:
            doomed = []
            for _, record_id in sorted(kept):
                if len(doomed) >= excess:
                    break
                with lock:
                    rec = store.get(record_id)
                    if rec is not None and not heads_history(store, rec):
                        doomed.append(record_id)
            for start in range(0, len(doomed), chunk):
                with lock:
                    out.capped += [i for i in doomed[start : start + chunk] if semantic.remove(i)]
            out.protected_over_cap = max(0, excess - len(out.capped))
    return out
