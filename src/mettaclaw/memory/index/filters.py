"""Filters over the memory index's rows (source, kind, tags, scopes, time), in process.

Why in process: the FilterIndex answers in microseconds what the vector store answers in tens of
milliseconds at 100k rows (docs/decisions/0007), and it stays correct as memories
come and go; `where_filter` says the same filter in Chroma's syntax for the store's slow path.
"""

from __future__ import annotations

from typing import Any

from mettaclaw.memory.core.scopes import DEFAULT as DEFAULT_SCOPE
from mettaclaw.memory.core.scopes import PREFIX as SCOPE_PREFIX
from mettaclaw.memory.core.tags import row_tags, tag_keys
from mettaclaw.memory.core.times import time_key


def where_filter(*, since: str | None = None, until: str | None = None, source: str | None = None,
                 tags: Any = None, kind: str | tuple[str, ...] | None = None) -> dict[str, Any] | None:
    """The same filter as FilterIndex.select, in Chroma `where` syntax (for the store's slow path)."""
    conds: list[dict[str, Any]] = []
    if since is not None:
        conds.append({"ts": {"$gte": time_key(since)[1]}})
    if until is not None:
        conds.append({"ts": {"$lte": time_key(until, end_of_day=True)[1]}})
    if source is not None:
        conds.append({"source": source})
    if kind is not None:
        conds.append({"kind": kind} if isinstance(kind, str) else {"kind": {"$in": list(kind)}})
    conds.extend({key: True} for key in tag_keys([tags] if isinstance(tags, str) else tags or ()))
    if not conds:
        return None
    return conds[0] if len(conds) == 1 else {"$and": conds}


class FilterIndex:
    """Id sets by source, kind and tag, and each id's time: filters without touching the store."""

    def __init__(self) -> None:
        self.by: dict[str, dict[str, set[str]]] = {"source": {}, "kind": {}, "tag": {}}
        self.ts: dict[str, float | None] = {}

    @staticmethod
    def _keys(meta: dict[str, Any]) -> list[tuple[str, str]]:
        keys = [("source", str(meta.get("source", ""))), ("kind", str(meta.get("kind", "")))]
        return keys + [("tag", t) for t in row_tags(meta)]

    def add(self, memory_id: str, meta: dict[str, Any]) -> None:
        for field_name, value in self._keys(meta):
            self.by[field_name].setdefault(value, set()).add(memory_id)
        self.ts[memory_id] = meta.get("ts")

    def state(self) -> dict[str, dict[str, list[str]]]:
        """The id sets, JSON-ready, that `restore` takes back: kept in the memory index's snapshot,
        because adding 100k rows one by one is a large share of a restart. (The times are not: the
        rows' metadata holds them.)"""
        return {f: {v: list(ids) for v, ids in values.items() if ids} for f, values in self.by.items()}

    @classmethod
    def restore(cls, state: dict[str, dict[str, list[str]]], metas: dict[str, dict[str, Any]]) -> FilterIndex:
        """The index `state` describes, over the rows whose metadata is `metas`."""
        index = cls()
        index.by = {f: {v: set(ids) for v, ids in state.get(f, {}).items()} for f in index.by}
        index.ts = {i: meta.get("ts") for i, meta in metas.items()}
        return index

    def tag_values(self, prefix: str) -> list[str]:
        """What follows `prefix` in the tags some row still carries (`WHO_TAG`: everyone who spoke)."""
        return [t[len(prefix):] for t, ids in self.by["tag"].items() if ids and t.startswith(prefix)]

    def ids(self) -> set[str]:
        """Every row's id, as the id sets know them (each row has a kind, if only "")."""
        return set().union(*self.by["kind"].values())

    def remove(self, memory_id: str, meta: dict[str, Any]) -> None:
        for field_name, value in self._keys(meta):
            self.by[field_name].get(value, set()).discard(memory_id)
        self.ts.pop(memory_id, None)

    def in_scopes(self, scopes: frozenset[str]) -> set[str] | None:
        """Ids of rows in any of `scopes` (scopes.py: untagged rows are the agent's), or None when
        that is every row."""
        tagged = {t[len(SCOPE_PREFIX):]: ids for t, ids in self.by["tag"].items() if t.startswith(SCOPE_PREFIX) and ids}
        wanted = set().union(*(ids for name, ids in tagged.items() if name in scopes))
        if DEFAULT_SCOPE not in scopes:
            return wanted
        others = set().union(*(ids for name, ids in tagged.items() if name not in scopes))
        return None if not others else set(self.ts) - others

    def select(self, *, since: str | None = None, until: str | None = None, source: str | None = None,
               tags: Any = None, kind: str | tuple[str, ...] | None = None,
               scopes: frozenset[str] | None = None) -> set[str] | None:
        """Ids passing every given filter, or None when no filter was given (everything passes).
        `kind` is one kind or a tuple of kinds (any of them); `scopes` the scopes a reader may see."""
        sets = []
        if scopes is not None and (in_scopes := self.in_scopes(scopes)) is not None:
            sets.append(in_scopes)
        if source is not None:
            sets.append(self.by["source"].get(source, set()))
        if kind is not None:
            kinds = (kind,) if isinstance(kind, str) else tuple(kind)
            sets.append(set().union(*(self.by["kind"].get(k, set()) for k in kinds)))
        sets.extend(self.by["tag"].get(t, set()) for t in ([tags] if isinstance(tags, str) else tags or ()))
        if since is None and until is None:
            if not sets:
                return None
            sets.sort(key=len)
            return set(sets[0]).intersection(*sets[1:])
        low = time_key(since)[1] if since is not None else float("-inf")
        high = time_key(until, end_of_day=True)[1] if until is not None else float("inf")
        pool = set(sets[0]).intersection(*sets[1:]) if sets else self.ts.keys()
        return {i for i in pool if (t := self.ts.get(i)) is not None and low <= t <= high}
