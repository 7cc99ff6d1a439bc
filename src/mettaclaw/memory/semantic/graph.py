"""The weighted, typed graph: relation registry, Hebbian strengthening, decay, co-occurrence edges
and ACT-R's associative strength (`associative_strength`, an addend of a record's activation; the
spreading recall does across layers is another model, core/ranking.spread). Pure functions over a
SemanticStore, so both backends share the maths.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import defaultdict
from collections.abc import Callable

from mettaclaw.textutil import quoted

from .records import INDEX_TAG, Edge, SemanticRecord
from .store import SemanticStore

# name -> symmetric. RELATED_TO is symmetric here because co-occurrence (its main source) is.
BUILTIN_RELATIONS: dict[str, bool] = {
    "IS_A": False, "HAS_PART": False, "PART_OF": False, "CAUSES": False, "USES": False, "PRODUCES": False,
    "REQUIRES": False, "IMPLEMENTS": False, "SIMILAR_TO": True, "TRENDS_WITH": True, "CORRELATES_WITH": True,
    "PREDICTS": False, "RELATED_TO": True,
    # cross-layer: a record <- the episodes it was distilled from (or an inference <- its premises); an
    # episode -> the concept it is one more instance of; the rest link the statistics layer (dream/quantify.py)
    "DERIVED_FROM": False, "INSTANCE_OF": False, "INFORMS": False, "COMPUTED_FROM": False, "QUANTIFIES": False,
    "STATISTICALLY_CONFIRMS": False, "TEMPORALLY_CORRELATES": True,
}
CROSS_LAYER = frozenset({"DERIVED_FROM", "INSTANCE_OF", "INFORMS", "COMPUTED_FROM", "QUANTIFIES",
                         "STATISTICALLY_CONFIRMS", "TEMPORALLY_CORRELATES"})
INITIAL_WEIGHT = 0.1
_RELATION_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,39}$")
DAY = 86400.0


def canonical_relation(name: str) -> str:
    """`is a`, `is-a`, `IsA` -> `IS_A`; refuses names that could not be a relation type."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip())
    canon = re.sub(r"[^A-Za-z0-9]+", "_", spaced).strip("_").upper()
    if not _RELATION_NAME.match(canon):
        raise ValueError(f"relation type {quoted(name)} is not a name (use letters, digits, _; e.g. IS_A)")
    return canon


class RelationRegistry:
    """Known relation types, built-in or learned at run time; learned ones persist in the store."""

    def __init__(self, store: SemanticStore) -> None:
        self._store = store
        known = store.relation_types()
        for name, symmetric in BUILTIN_RELATIONS.items():
            if name not in known:
                store.put_relation_type(name, symmetric, True)
        self._types = store.relation_types()

    def ensure(self, name: str, symmetric: bool = False) -> tuple[str, bool]:
        """The canonical name, and whether this call registered it as a new learned type."""
        canon = canonical_relation(name)
        if canon in self._types:
            return canon, False
        self._store.put_relation_type(canon, symmetric, False)
        self._types[canon] = (symmetric, False)
        return canon, True

    def is_symmetric(self, name: str) -> bool:
        return self._types.get(name, (False, False))[0]

    def types(self) -> dict[str, dict[str, bool]]:
        return {n: {"symmetric": s, "builtin": b} for n, (s, b) in sorted(self._types.items())}


def hebbian(weight: float, rate: float = 0.1) -> float:
    """w <- w + rate * (1 - w): bounded growth, large for new links, small for established ones."""
    return weight + rate * (1.0 - weight)


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def edge_key(src: str, dst: str, type_: str, symmetric: bool) -> tuple[str, str]:
    """Symmetric edges are stored once, endpoints in sorted order, so A~B and B~A are one edge."""
    return (min(src, dst), max(src, dst)) if symmetric else (src, dst)


def hand_over_links(store: SemanticStore, old: SemanticRecord, new_id: str, symmetric: Callable[[str], bool]) -> None:
    """A reworded version (a merge) is the same fact: its relations, associations and the links of
    records citing it move to `new_id`, so the current version loses none and a neighbour's fan does
    not count the fact twice; the citations of its own episodes are copied, so the closed version
    keeps its provenance as a superseded one does."""
    own = set(old.source_episodes)
    for edge in store.edges_of(old.id):
        if not (edge.type in CROSS_LAYER and edge.other(old.id) in own):
            store.delete_edge(edge.src, edge.dst, edge.type)
        src, dst = (new_id if end == old.id else end for end in (edge.src, edge.dst))
        src, dst = edge_key(src, dst, edge.type, symmetric(edge.type))
        store.put_edge(dataclasses.replace(edge, src=src, dst=dst))


def decay_edges(store: SemanticStore, now: float, idle_days: float = 30.0, factor: float = 0.95,
                floor: float = 0.01) -> tuple[int, int]:
    """Multiply idle within-layer edges by `factor`; drop those under `floor`. Provenance edges
    (cross-layer) are evidence, not association, and never decay."""
    decayed = pruned = 0
    for edge in store.iter_edges():
        if edge.type in CROSS_LAYER or edge.dst_layer != "semantic":
            continue
        last = edge.last_co_access if edge.last_co_access is not None else edge.created_at
        if now - last < idle_days * DAY:
            continue
        edge.weight *= factor
        if edge.weight < floor:
            store.delete_edge(edge.src, edge.dst, edge.type)
            pruned += 1
        else:
            store.put_edge(edge)
            decayed += 1
    return decayed, pruned


def update_cooccurrence(store: SemanticStore, record_id: str, episodes: list[str], now: float) -> int:
    """RELATED_TO between records sharing source episodes, weighted by Jaccard of their episode sets."""
    if not episodes:
        return 0
    sets = store.sharing_episodes(episodes)
    mine = sets.pop(record_id, set(episodes))
    written = 0
    for other, theirs in sets.items():
        rec = store.get(other)
        if rec is None or not rec.current or INDEX_TAG in rec.tags:
            continue
        a, b = edge_key(record_id, other, "RELATED_TO", True)
        weight = jaccard(mine, theirs)
        edge = store.get_edge(a, b, "RELATED_TO") or Edge(a, b, "RELATED_TO", weight, created_at=now)
        edge.weight = max(edge.weight, weight) if edge.co_access else weight
        store.put_edge(edge)
        written += 1
    return written


def associative_strength(store: SemanticStore, context: list[str], candidates: set[str], s: float = 1.6) -> dict[str, float]:
    """ACT-R's associative strength of each candidate i from the context records j linked to it (what ACT-R
    calls spreading activation): sum over j of W * w_edge * max(0, S - ln fan_j), W = 1 / len(context)."""
    if not context:
        return {}
    w_source = 1.0 / len(context)
    out: dict[str, float] = defaultdict(float)
    for j in context:
        edges = store.edges_of(j)
        if not edges:
            continue
        strength = max(0.0, s - math.log(len(edges)))
        for edge in edges:
            other = edge.other(j)
            if other in candidates:
                out[other] += w_source * edge.weight * strength
    return dict(out)
