"""The statistics layer in the graph: each kind of action's statistic (statistics.py) is a node
`stat:<scope>:<kind>` in layer "statistics", which the dream links to what it counted and what it says,
so spreading from a concept reaches the numbers about it and an inspector can draw them:

- COMPUTED_FROM statistic -> the episodes it counted (its newest evidence, at most 200);
- QUANTIFIES statistic -> each pattern concept of its kind (weight: the Wilson lower bound of the
  pattern's outcome rate);
- STATISTICALLY_CONFIRMS statistic -> such a pattern when the statistic backs its outcome beyond the
  prediction gate, over all runs or in one part of the day (weight: that confidence);
- INFORMS concept -> statistic: a concept named by the program the kind runs (`backup` for `shell backup`);
- TEMPORALLY_CORRELATES statistic <-> statistic: kinds run in the same episodes (Jaccard of their evidence).

Only kinds whose count changed since the last dream are relinked (`linked`: node id -> count), and
the links of a statistic that is gone (its scope forgotten) are removed.
"""

from __future__ import annotations

from typing import Any

from mettaclaw.memory.core import scopes
from mettaclaw.memory.episodes.statistics import MIN_EVIDENCE, KindStatistics, wilson_lower
from mettaclaw.memory.semantic.normalize import normalize_name
from mettaclaw.memory.semantic.records import Edge
from mettaclaw.memory.semantic.store import RecordFilter

LAYER = "statistics"
LINK_TYPES = ("COMPUTED_FROM", "QUANTIFIES", "STATISTICALLY_CONFIRMS", "INFORMS", "TEMPORALLY_CORRELATES")
CONFIRMS_ABOVE = 0.5  # the PREDICTIONS gate: the outcome holds more often than not, beyond chance


def _status(outcome: str) -> str:
    """A pattern's failed outcome as the statistics' failure status: the dream names a failure status
    `exit N` (a timeout is `exit 124`) and a skill's error `error: <its first words>`, which the
    statistics count as -1 (dream/episodes.py from_trace, statistics.py status_of)."""
    return "-1" if outcome.startswith("error") else outcome.removeprefix("exit ").strip()


def _support(stat: KindStatistics, outcome: str) -> tuple[float, float]:
    """(rate bound, support): the Wilson lower bound of the outcome over all runs, and the best of that
    and the confidence of a prediction for some part of the day that expects this outcome (the
    statistic confirms "fails at night" even when it fails only a third of all runs)."""
    success = outcome == "success"
    rate = wilson_lower(stat.ok if success else stat.statuses.get(_status(outcome), 0), stat.n)
    support = rate
    for part in stat.parts:
        p = stat.prediction(part)
        if p is not None and (p.expected == "success") == success and (success or _status(outcome) in p.statuses):
            support = max(support, p.confidence)
    return rate, support


def _patterns(store: Any, stat: KindStatistics) -> list[Any]:
    found = store.select(RecordFilter(tags_all=("pattern", f"action_type:{stat.kind}"), kinds=("concept",)))
    return [r for r in found if scopes.of_tags(r.tags) == stat.scope and r.properties.get("action") == stat.kind]


def _named_concepts(store: Any, stat: KindStatistics) -> list[Any]:
    """Concepts named by the program a shell kind runs (a skill's name is not a concept)."""
    program = stat.kind.removeprefix("shell ").strip() if stat.kind.startswith("shell ") else ""
    name = normalize_name(program) if program else ""
    if not name:
        return []
    return [r for r in store.find_by_key(name_norm=name)
            if r.current and r.kind == "concept" and scopes.of_tags(r.tags) == stat.scope]


def _unlink(store: Any, node: str) -> None:
    for edge in store.edges_of(node):
        if edge.type in LINK_TYPES:
            store.delete_edge(edge.src, edge.dst, edge.type)


def _evidence(stat: KindStatistics) -> set[str]:
    return {str(r[0]) for r in stat.references}


def _relink(store: Any, stat: KindStatistics, others: list[KindStatistics], now: float) -> None:
    _unlink(store, stat.id)

    def edge(dst: str, type_: str, weight: float, layer: str) -> Edge:
        return Edge(stat.id, dst, type_, weight, created_at=now, src_layer=LAYER, dst_layer=layer)

    mine = _evidence(stat)
    for episode in mine:
        store.put_edge(edge(episode, "COMPUTED_FROM", 1.0, "episodic"))
    for pattern in _patterns(store, stat):
        rate, support = _support(stat, str(pattern.properties.get("outcome", "")))
        store.put_edge(edge(pattern.id, "QUANTIFIES", max(rate, 0.01), "semantic"))
        if stat.n >= MIN_EVIDENCE and support > CONFIRMS_ABOVE:
            store.put_edge(edge(pattern.id, "STATISTICALLY_CONFIRMS", support, "semantic"))
    for concept in _named_concepts(store, stat):
        store.put_edge(Edge(concept.id, stat.id, "INFORMS", 0.5, created_at=now, dst_layer=LAYER))
    for other in others:
        if other.id == stat.id or other.scope != stat.scope:
            continue
        theirs = _evidence(other)
        if len(mine & theirs) >= MIN_EVIDENCE:
            a, b = sorted((stat.id, other.id))
            store.put_edge(Edge(a, b, "TEMPORALLY_CORRELATES", len(mine & theirs) / len(mine | theirs),
                                created_at=now, src_layer=LAYER, dst_layer=LAYER))


def link(store: Any, statistics: Any, linked: dict[str, int], now: float) -> int:
    """Relink the statistics that changed since the last dream; how many were relinked."""
    current = {s.id: s for s in statistics}
    changed = [s for s in current.values() if linked.get(s.id) != s.n]
    with store.transaction():
        for gone in set(linked) - set(current):
            _unlink(store, gone)
            del linked[gone]
        for stat in changed:
            _relink(store, stat, list(current.values()), now)
            linked[stat.id] = stat.n
    return len(changed)
