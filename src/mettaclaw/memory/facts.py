"""The semantic layer as callers outside memory use it (`Memory.facts`): facts, concepts, their links and
versions, with Memory's locking and the index's copies kept in line.

Why a view and not the layer itself: the dream writes from its own thread, and each write to semantic
memory must be followed by the mirror's sync (mirror.py), so a caller holding the layer had to take
Memory's lock and sync by hand (five places did). Here every call holds the lock and every write syncs;
`recall` holds its hits to the relevance floor `query` uses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from mettaclaw.memory.semantic import SemanticMemory
from mettaclaw.memory.semantic.records import Edge, LearnResult, RecallResult, SemanticRecord
from mettaclaw.memory.semantic.store import RecordFilter

T = TypeVar("T")


class Facts:
    """Semantic memory behind Memory's lock: reads are consistent with the dream's writes, writes are
    mirrored into the memory index before they return."""

    def __init__(self, semantic: SemanticMemory, lock: threading.RLock, synced: Callable[[], None],
                 relevant: Callable[[str, list[SemanticRecord]], set[str]]) -> None:
        self._semantic, self._lock, self._synced, self._relevant = semantic, lock, synced, relevant

    def _write(self, write: Callable[[], T]) -> T:
        try:
            with self._lock:
                return write()
        finally:
            self._synced()

    # --- writes
    def learn(self, content: str, **fields: Any) -> LearnResult:
        """SemanticMemory.learn: a new record, or the reinforcement, merge or supersession it amounts to."""
        return self._write(lambda: self._semantic.learn(content, **fields))

    def relate(self, a: str, relation: str, b: str, weight: float | None = None, scope: str | None = None) -> Edge:
        """A typed, weighted link between two records (ids or names; an unknown name becomes a concept)."""
        return self._write(lambda: self._semantic.relate(a, relation, b, weight, scope=scope))

    def supersede(self, old: str, new_content: str, **fields: Any) -> LearnResult:
        """A new version of a fact; the old one is closed and kept in its history."""
        return self._write(lambda: self._semantic.supersede(old, new_content, **fields))

    # --- reads
    def recall(self, query: str | None = None, limit: int = 10, **filters: Any) -> list[RecallResult]:
        """Records by meaning (or by filters alone, mode logical), none below the relevance floor."""
        with self._lock:
            return self._semantic.recall(query, limit, relevant=self._relevant, **filters)

    def history(self, ref: str, visible: frozenset[str] | None = None) -> list[SemanticRecord]:
        """Every version of a fact, oldest first."""
        with self._lock:
            return self._semantic.history(ref, visible)

    def get(self, record_id: str) -> SemanticRecord | None:
        with self._lock:
            return self._semantic.get(record_id)

    def relation_types(self) -> set[str]:
        """The relation types links may have (the built-in ones and those made since)."""
        with self._lock:
            return self._semantic.relation_types()

    def tags(self, visible: frozenset[str] | None = None) -> dict[str, int]:
        """Each tag of the current records a reader of `visible` may see, with how many carry it."""
        with self._lock:
            return self._semantic.tags(visible)

    def select(self, where: RecordFilter, limit: int, after: tuple[float, str] | None = None) -> list[SemanticRecord]:
        """Records passing a filter, newest first, after the record `after` names (its time and id)."""
        with self._lock:
            return self._semantic.records.select(where, limit=limit, after=after)

    def edges_of(self, record_id: str) -> list[Edge]:
        with self._lock:
            return list(self._semantic.records.edges_of(record_id))

    def versions(self, lineage: str) -> list[SemanticRecord]:
        """Every version of one lineage (a fact and the facts that superseded it)."""
        with self._lock:
            return list(self._semantic.records.by_lineage(lineage))

    def changes(self, record_id: str) -> list[dict[str, Any]]:
        """The write log of one record: what changed it, when."""
        with self._lock:
            return self._semantic.changes(record_id)

    def summary(self) -> dict[str, Any]:
        """How many records of each kind the store holds."""
        with self._lock:
            return dict(self._semantic.records.summary())
