"""Per-scope retention (`scopePolicies`): what is older than a scope's `ttlDays` goes, then what is over
its `maxEntries` goes, lowest keep score first.

The keep score is the dream's own (`dream.consolidate.keep_score`: confidence, current strength, how
often it was recalled), so a scope is trimmed the way the dream caps the semantic layer. Memories and
episodes have no confidence or recall count of their own: they are scored as a record of middling
confidence whose strength decays with age (episodes with the dream's one-week half-life, memories a
month), never recalled.

Eviction deletes as `forget` does, since a scope's limit is what its owner asked to be kept: an
evicted episode's trace record and turn-log line are erased, with every fact, summary or theme that
shows it; an evicted memory's text leaves the `remember` of the turns that stored it and their
turn-log lines (it stayed there, in HISTORY, `episodes` and the export, after its row was gone).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.times import epoch_seconds
from mettaclaw.memory.dream.consolidate import decay_factor, keep_score, last_use
from mettaclaw.memory.episodes.index import EPISODE_KIND, offset_of
from mettaclaw.memory.index.priors import PRIOR_KIND

DAY = 86_400.0
HALF_LIFE_DAYS = {EPISODE_KIND: 7.0}
ROW_CONFIDENCE = 0.5


@dataclass
class _Row:
    """An index row scored like a record."""

    confidence: float
    strength: float
    access_times: list[float] = field(default_factory=list)


def entries(memory: Any, scope: str, now: float) -> list[tuple[float, float, str, str]]:
    """(keep score, age in seconds, id, what) of everything `scope` holds: its memories and
    episodes ("row") and its current semantic records ("record")."""
    visible = frozenset({scopes.check(scope)})
    out = []
    rows = memory.index.select(scopes=visible)
    for row_id in (rows if rows is not None else [m.id for m in memory.index]):
        row = memory.index.row(row_id)
        if row is None or row.metadata.get("kind") in (PRIOR_KIND, "derived"):
            continue  # priors come from files; a fact's copy goes with its fact
        when = epoch_seconds(str(row.metadata.get("time") or "")) or now  # the row's `ts` is a key, no instant
        age = max(0.0, now - when)
        half_life = HALF_LIFE_DAYS.get(str(row.metadata.get("kind")), 30.0)
        score = keep_score(_Row(ROW_CONFIDENCE, decay_factor(age, half_life)), now)
        out.append((score, age, row_id, "row"))
    for rec in memory.semantic.records.select(memory.semantic.scope_filter(visible)):
        out.append((keep_score(rec, now), max(0.0, now - last_use(rec)), rec.id, "record"))
    return out


def evict(memory: Any, policies: dict[str, Any], now: float) -> list[str]:
    """Apply every scope's policy (the caller holds the memory's lock); the ids evicted."""
    gone: list[str] = []
    for scope, policy in policies.items():
        found = entries(memory, scope, now)
        doomed = set()
        if policy.ttlDays is not None:
            doomed |= {(entry_id, what) for _, age, entry_id, what in found if age > policy.ttlDays * DAY}
        if policy.maxEntries is not None:
            kept = sorted((e for e in found if (e[2], e[3]) not in doomed), key=lambda e: e[0])
            doomed |= {(entry_id, what) for _, _, entry_id, what in kept[: max(0, len(kept) - policy.maxEntries)]}
        memories, turns = [], []  # index rows that are neither episodes nor records, and turns: one call each
        for entry_id, what in sorted(doomed):
            if what == "record":
                gone += memory.semantic.forget(entry_id) if memory.semantic.get(entry_id) is not None else []
            elif (offset := offset_of(entry_id)) is not None:
                turns.append(offset)
            else:
                memories.append(entry_id)
        if turns:  # as `forget` does: the turn log, the statistics, and every fact, summary or theme that shows them
            gone += memory._forget_turns(turns)
        gone += memory._forget_memories(memories)  # as `forget` does: their turns' trace records and log lines too
    return gone
