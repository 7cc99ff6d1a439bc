"""Write-behind in front of the vector index: one `learn` should not pay a Chroma write.

The record store is the source of truth (it keeps each record's vector); the vector store is an
index rebuilt from it. New vectors are queued in the record store inside the write's transaction,
held in a small in-process matrix that every query searches exactly, and sent to the index in batches.
A crash before a flush loses nothing: the queue is replayed from the record store on the next open.
Measured at 100k records: a single Chroma upsert ~16 ms, so batching is most of a learn's cost.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from mettaclaw.memory.vectors import StoredItem, VectorStore, Where, cosines, matches

from .store import SemanticStore

FLUSH_EVERY = 64


class BufferedVectors:
    """A VectorStore: the index plus the not-yet-flushed rows, searched together."""

    def __init__(self, index: VectorStore, records: SemanticStore, flush_every: int = FLUSH_EVERY) -> None:
        self.index, self.records, self.flush_every = index, records, flush_every
        self._pending: dict[str, tuple[np.ndarray, str, dict[str, Any]]] = {}
        self._lock = threading.RLock()  # the dream phase may write while the agent's turn reads
        queued = records.queued_vectors()
        if queued:  # a previous run ended before its last flush
            for rec in records.get_many(queued):
                if rec.embedding is not None:
                    self._pending[rec.id] = (rec.embedding, rec.content, {"kind": rec.kind, "name": rec.name_norm})
            self.flush()

    def add(self, ids: list[str], vectors: np.ndarray, documents: list[str], metadatas: list[dict[str, Any]]) -> None:
        """Queue (durably, in the caller's transaction) and hold; `maybe_flush` sends them later."""
        self.records.queue_vectors(list(ids))
        with self._lock:
            for i, row_id in enumerate(ids):
                self._pending[row_id] = (np.asarray(vectors[i], dtype=np.float32), documents[i], dict(metadatas[i]))

    def maybe_flush(self) -> None:
        if len(self._pending) >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            if not self._pending:
                return
            ids = list(self._pending)
            rows = [self._pending[i] for i in ids]
            self.index.add(ids, np.stack([r[0] for r in rows]), [r[1] for r in rows], [r[2] for r in rows])
            self.records.unqueue_vectors(ids)
            for i in ids:
                self._pending.pop(i, None)

    def _held(self) -> list[tuple[str, tuple[np.ndarray, str, dict[str, Any]]]]:
        with self._lock:
            return list(self._pending.items())

    def get(self, ids: list[str]) -> list[StoredItem]:
        held = dict(self._held())
        return ([StoredItem(i, held[i][1], held[i][2]) for i in ids if i in held]
                + self.index.get([i for i in ids if i not in held]))

    def delete(self, ids: list[str]) -> None:
        with self._lock:
            for i in ids:
                self._pending.pop(i, None)
        self.records.unqueue_vectors(list(ids))
        self.index.delete(list(ids))

    def query(self, vector: np.ndarray, k: int, where: Where | None = None,
              bare: bool = False) -> list[tuple[StoredItem, float]]:
        held = self._held()
        pending = {i for i, _ in held}
        found = [(item, s) for item, s in self.index.query(vector, k, where, bare=bare) if item.id not in pending]
        if held:
            q = np.asarray(vector, dtype=np.float32)
            for row_id, (vec, doc, meta) in held:
                if matches(meta, where):
                    found.append((StoredItem(row_id, doc, meta), float(vec @ q)))
        found.sort(key=lambda pair: -pair[1])
        return found[:k]

    def similarity(self, vector: np.ndarray, ids: list[str]) -> dict[str, float]:
        held = dict(self._held())
        out = cosines(vector, [i for i in ids if i in held], [held[i][0] for i in ids if i in held])
        return {**self.index.similarity(vector, [i for i in ids if i not in held]), **out}

    def find(self, where: Where, limit: int | None = None) -> list[StoredItem]:
        held = [StoredItem(i, d, m) for i, (_, d, m) in self._held() if matches(m, where)]
        out = held + [item for item in self.index.find(where) if item.id not in {h.id for h in held}]
        return out if limit is None else out[:limit]

    def count(self) -> int:
        return self.index.count() + sum(1 for i, _ in self._held() if not self.index.get([i]))

    def iter_all(self, batch: int = 1000) -> Iterator[StoredItem]:
        held = self._held()
        pending = {i for i, _ in held}
        yield from (StoredItem(i, d, m) for i, (_, d, m) in held)
        yield from (item for item in self.index.iter_all(batch) if item.id not in pending)

    def close(self) -> None:
        self.flush()
        getattr(self.index, "close", lambda: None)()
