"""The record store behind semantic memory: a Protocol, a filter both backends honour, and the
in-memory implementation tests run on (the SQLite one lives in sqlite_store.py).

Vectors live in a VectorStore; this store holds what needs transactions and exact lookups: records
(with a copy of their vector, so re-ranking a filtered set never re-embeds), tags, source episodes,
edges, the relation registry and the version log.
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from mettaclaw.memory.stores.lexical import BM25Index

from .records import Edge, SemanticRecord

Link = tuple[str, str, float]  # (layer, node, weight) at the other end of an edge


def links(node: str, edges: list[Edge]) -> list[Link]:
    """The other end of each edge of `node`, with its layer and the edge's weight."""
    out = []
    for edge in edges:
        other = edge.other(node)
        out.append((edge.dst_layer if other == edge.dst else edge.src_layer, other, edge.weight))
    return out


@dataclass(frozen=True)
class RecordFilter:
    """The logical part of a query. Validity: current facts unless `as_of` or `include_history`.

    `time_from`/`time_to` bound `recorded_at`; `name_pattern` is a glob (`coffee*`) on the
    normalised name or the content.
    """

    tags_all: tuple[str, ...] = ()
    tags_any: tuple[str, ...] = ()
    tags_none: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    category: str | None = None
    min_confidence: float | None = None
    time_from: float | None = None
    time_to: float | None = None
    name_pattern: str | None = None
    as_of: float | None = None
    include_history: bool = False

    def is_logical(self) -> bool:
        return bool(self.tags_all or self.tags_any or self.tags_none or self.kinds or self.category
                    or self.min_confidence is not None or self.time_from is not None
                    or self.time_to is not None or self.name_pattern)


def record_matches(rec: SemanticRecord, f: RecordFilter) -> bool:
    if f.as_of is not None:
        if not rec.valid_at(f.as_of):
            return False
    elif not f.include_history and not rec.current:
        return False
    tags = set(rec.tags)
    if f.tags_all and not set(f.tags_all) <= tags:
        return False
    if f.tags_any and not tags & set(f.tags_any):
        return False
    if f.tags_none and tags & set(f.tags_none):
        return False
    if f.kinds and rec.kind not in f.kinds:
        return False
    if f.category is not None and rec.category != f.category:
        return False
    if f.min_confidence is not None and rec.confidence < f.min_confidence:
        return False
    if f.time_from is not None and rec.recorded_at < f.time_from:
        return False
    if f.time_to is not None and rec.recorded_at > f.time_to:
        return False
    if f.name_pattern:
        pat = f.name_pattern.lower()
        if not (fnmatch.fnmatchcase(rec.name_norm, pat) or fnmatch.fnmatchcase(rec.name.lower(), pat)
                or fnmatch.fnmatchcase(rec.content.lower(), pat)):
            return False
    return True


@runtime_checkable
class SemanticStore(Protocol):
    """Records, edges, relation types and versions; every mutating call is one transaction unless
    the caller groups several in `transaction()`."""

    def transaction(self) -> contextlib.AbstractContextManager[None]: ...
    def put(self, record: SemanticRecord, reindex: bool = True) -> None: ...
    def get(self, record_id: str) -> SemanticRecord | None: ...
    def get_many(self, ids: list[str]) -> list[SemanticRecord]: ...
    def delete(self, record_id: str) -> bool: ...
    def count(self, current_only: bool = False) -> int: ...
    def ids(self) -> list[str]:
        """Every record's id (nothing decoded)."""
        ...
    def iter_records(self) -> Iterator[SemanticRecord]:
        """Every record, in the order each was first written: an export lists them so, and its import
        writes them in that order, so records that tie in time keep their order (`select`)."""
        ...
    def find_by_key(self, *, content_key: str | None = None, name_norm: str | None = None,
                    current_only: bool = True) -> list[SemanticRecord]: ...
    def find_by_subject(self, subject: str, relation: str, current_only: bool = True) -> list[SemanticRecord]: ...
    def by_lineage(self, lineage: str) -> list[SemanticRecord]: ...
    def sharing_episodes(self, episode_ids: list[str]) -> dict[str, set[str]]: ...
    def select(self, f: RecordFilter, limit: int | None = None,
               after: tuple[float, str] | None = None) -> list[SemanticRecord]:
        """The records passing `f`, newest first; of those recorded at the same time, the one written
        last first (the order a listing, the `recall` skill's or the inspector's, shows them in).
        `after` (recorded_at, id) of a record: only those listed after it, the next page of a listing
        (a time alone is no cursor: the records recorded with the last one shown and not shown were
        skipped); when that record is gone, all those recorded at its time, so none is skipped."""
        ...
    def filter_ids(self, ids: list[str], f: RecordFilter) -> set[str]:
        """Which of `ids` pass `f`, without decoding the records."""
        ...
    def select_vectors(self, f: RecordFilter, limit: int) -> tuple[list[str], np.ndarray]:
        """Ids and a vector matrix of the records passing `f`: rank a filtered set without decoding it.
        When more than `limit` pass, `limit + 1` placeholder ids and no vectors (too many to scan)."""
        ...
    def lexical(self, query: str, limit: int, f: RecordFilter | None = None) -> list[tuple[str, float]]:
        """BM25 over name and content, best first; with `f`, only records passing it."""
        ...
    def tag_counts(self, current_only: bool = True) -> dict[str, int]: ...
    def summary(self) -> dict[str, Any]: ...
    def put_edge(self, edge: Edge) -> None: ...
    def get_edge(self, src: str, dst: str, type_: str) -> Edge | None: ...
    def edges_of(self, node: str) -> list[Edge]: ...
    def links_of(self, node: str) -> list[Link]:
        """(layer, other node, weight) of each edge of `node`: what spreading reads."""
        ...
    def delete_edge(self, src: str, dst: str, type_: str) -> None: ...
    def iter_edges(self) -> Iterator[Edge]: ...
    def put_relation_type(self, name: str, symmetric: bool, builtin: bool) -> None: ...
    def relation_types(self) -> dict[str, tuple[bool, bool]]: ...
    def log_version(self, record_id: str, action: str, at: float, snapshot: dict[str, Any]) -> None: ...
    def versions(self, record_id: str) -> list[dict[str, Any]]: ...
    def queue_vectors(self, ids: list[str]) -> None:
        """Mark records whose vectors are not yet in the vector index (same transaction as the write)."""
        ...
    def unqueue_vectors(self, ids: list[str]) -> None: ...
    def queued_vectors(self) -> list[str]: ...
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def close(self) -> None: ...


def _copy(rec: SemanticRecord) -> SemanticRecord:
    """Stores hand out copies: a caller mutating a record without `put` must not change the store."""
    return SemanticRecord.from_dict(rec.to_dict(), None if rec.embedding is None else rec.embedding.copy())


class InMemorySemanticStore:
    """Dicts and a BM25 index; the reference semantics the SQLite store is tested against."""

    def __init__(self) -> None:
        self._records: dict[str, SemanticRecord] = {}
        self._edges: dict[tuple[str, str, str], Edge] = {}
        self._adjacent: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
        self._relations: dict[str, tuple[bool, bool]] = {}
        self._versions: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._meta: dict[str, str] = {}
        self._queue: dict[str, None] = {}
        self._bm25 = BM25Index()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        yield

    def put(self, record: SemanticRecord, reindex: bool = True) -> None:
        self._records[record.id] = _copy(record)
        if reindex or record.id not in self._bm25:
            self._bm25.add(record.id, f"{record.name} {record.content}")

    def get(self, record_id: str) -> SemanticRecord | None:
        rec = self._records.get(record_id)
        return None if rec is None else _copy(rec)

    def get_many(self, ids: list[str]) -> list[SemanticRecord]:
        return [_copy(self._records[i]) for i in ids if i in self._records]

    def delete(self, record_id: str) -> bool:
        if self._records.pop(record_id, None) is None:
            return False
        self._versions.pop(record_id, None)
        self._bm25.remove(record_id)
        for key in list(self._adjacent.get(record_id, ())):
            self.delete_edge(*key)
        self._adjacent.pop(record_id, None)
        return True

    def count(self, current_only: bool = False) -> int:
        return sum(1 for r in self._records.values() if r.current) if current_only else len(self._records)

    def ids(self) -> list[str]:
        return list(self._records)

    def iter_records(self) -> Iterator[SemanticRecord]:
        for rec in list(self._records.values()):
            yield _copy(rec)

    def find_by_key(self, *, content_key: str | None = None, name_norm: str | None = None,
                    current_only: bool = True) -> list[SemanticRecord]:
        return [_copy(r) for r in self._records.values()
                if (content_key is None or r.content_key == content_key)
                and (name_norm is None or r.name_norm == name_norm) and (r.current or not current_only)]

    def find_by_subject(self, subject: str, relation: str, current_only: bool = True) -> list[SemanticRecord]:
        return [_copy(r) for r in self._records.values()
                if r.subject == subject and r.relation == relation and (r.current or not current_only)]

    def by_lineage(self, lineage: str) -> list[SemanticRecord]:
        found = [_copy(r) for r in self._records.values() if r.lineage == lineage]
        return sorted(found, key=lambda r: (r.valid_from, r.recorded_at))

    def sharing_episodes(self, episode_ids: list[str]) -> dict[str, set[str]]:
        wanted = set(episode_ids)
        return {r.id: set(r.source_episodes) for r in self._records.values() if wanted & set(r.source_episodes)}

    def select(self, f: RecordFilter, limit: int | None = None,
               after: tuple[float, str] | None = None) -> list[SemanticRecord]:
        found = [r for r in reversed(self._records.values()) if record_matches(r, f)]
        found.sort(key=lambda r: -r.recorded_at)  # stable: ties stay last written first
        if after is not None:  # (time, place in writing order) below the cursor's, as SQLite's rowid
            order = {rid: n for n, rid in enumerate(self._records)}
            mark = (after[0], order.get(after[1], len(order)))
            found = [r for r in found if (r.recorded_at, order[r.id]) < mark]
        return [_copy(r) for r in (found if limit is None else found[:limit])]

    def filter_ids(self, ids: list[str], f: RecordFilter) -> set[str]:
        return {i for i in ids if i in self._records and record_matches(self._records[i], f)}

    def select_vectors(self, f: RecordFilter, limit: int) -> tuple[list[str], np.ndarray]:
        found = [r for r in self._records.values() if r.embedding is not None and record_matches(r, f)]
        if len(found) > limit:
            return ["?"] * (limit + 1), np.zeros((0, 0), dtype=np.float32)
        if not found:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [r.id for r in found], np.stack([r.embedding for r in found])

    def lexical(self, query: str, limit: int, f: RecordFilter | None = None) -> list[tuple[str, float]]:
        allowed = None if f is None else {i for i, r in self._records.items() if record_matches(r, f)}
        return self._bm25.search(query, limit, allowed)

    def tag_counts(self, current_only: bool = True) -> dict[str, int]:
        counts = Counter(t for r in self._records.values() if r.current or not current_only for t in set(r.tags))
        return dict(counts.most_common())

    def summary(self) -> dict[str, Any]:
        recs = list(self._records.values())
        times = [r.recorded_at for r in recs]
        return {
            "records": len(recs),
            "current": sum(1 for r in recs if r.current),
            "by_kind": dict(Counter(r.kind for r in recs if r.current)),
            "oldest": min(times) if times else None,
            "newest": max(times) if times else None,
            "edges": len(self._edges),
        }

    def put_edge(self, edge: Edge) -> None:
        self._edges[edge.key()] = Edge(**vars(edge))
        self._adjacent[edge.src].add(edge.key())
        self._adjacent[edge.dst].add(edge.key())

    def get_edge(self, src: str, dst: str, type_: str) -> Edge | None:
        edge = self._edges.get((src, dst, type_))
        return None if edge is None else Edge(**vars(edge))

    def edges_of(self, node: str) -> list[Edge]:
        return [Edge(**vars(self._edges[k])) for k in self._adjacent.get(node, ()) if k in self._edges]

    def links_of(self, node: str) -> list[Link]:
        return links(node, [self._edges[k] for k in self._adjacent.get(node, ()) if k in self._edges])

    def delete_edge(self, src: str, dst: str, type_: str) -> None:
        key = (src, dst, type_)
        if self._edges.pop(key, None) is not None:
            self._adjacent[src].discard(key)
            self._adjacent[dst].discard(key)

    def iter_edges(self) -> Iterator[Edge]:
        for edge in list(self._edges.values()):
            yield Edge(**vars(edge))

    def put_relation_type(self, name: str, symmetric: bool, builtin: bool) -> None:
        self._relations[name] = (symmetric, builtin)

    def relation_types(self) -> dict[str, tuple[bool, bool]]:
        return dict(self._relations)

    def log_version(self, record_id: str, action: str, at: float, snapshot: dict[str, Any]) -> None:
        self._versions[record_id].append({"record_id": record_id, "action": action, "at": at, "snapshot": snapshot})

    def versions(self, record_id: str) -> list[dict[str, Any]]:
        return list(self._versions.get(record_id, []))

    def queue_vectors(self, ids: list[str]) -> None:
        self._queue.update(dict.fromkeys(ids))

    def unqueue_vectors(self, ids: list[str]) -> None:
        for i in ids:
            self._queue.pop(i, None)

    def queued_vectors(self) -> list[str]:
        return list(self._queue)

    def get_meta(self, key: str) -> str | None:
        return self._meta.get(key)

    def set_meta(self, key: str, value: str) -> None:
        self._meta[key] = value

    def close(self) -> None:
        pass
