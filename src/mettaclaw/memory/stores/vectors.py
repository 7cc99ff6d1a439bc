"""Vector stores behind one Protocol: ChromaDB for real, a dict for tests.

Every store holds (id, vector, document, metadata) rows, takes vectors computed by the project, and
filters with a subset of Chroma's `where` syntax so callers write one filter for both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

Where = dict[str, Any]


@dataclass
class StoredItem:
    id: str
    document: str
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class VectorStore(Protocol):
    """Rows of (id, vector, document, metadata); `add` upserts by id."""

    def add(self, ids: list[str], vectors: np.ndarray, documents: list[str], metadatas: list[dict[str, Any]]) -> None: ...

    def get(self, ids: list[str]) -> list[StoredItem]: ...

    def delete(self, ids: list[str]) -> None: ...

    def query(self, vector: np.ndarray, k: int, where: Where | None = None,
              bare: bool = False) -> list[tuple[StoredItem, float]]:
        """The k nearest rows by cosine similarity (higher is closer), optionally filtered. `bare`: the
        caller only needs ids and similarities (it holds its own copy of the rows), so a store may
        leave document and metadata empty; Chroma then skips a SQLite read per hit."""
        ...

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these rows (those that exist): to rank a candidate set a
        nearest-neighbour query did not reach."""
        ...

    def find(self, where: Where, limit: int | None = None) -> list[StoredItem]: ...

    def count(self) -> int: ...

    def iter_all(self, batch: int = 1000) -> Iterator[StoredItem]: ...


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and a > b,
    "$gte": lambda a, b: a is not None and a >= b,
    "$lt": lambda a, b: a is not None and a < b,
    "$lte": lambda a, b: a is not None and a <= b,
    "$in": lambda a, b: a in b,
    "$nin": lambda a, b: a not in b,
}


def cosines(vector: np.ndarray, ids: list[str], rows: Any) -> dict[str, float]:
    """{id: cosine of its row with `vector`} (rows need not be normalised)."""
    if not ids:
        return {}
    return dict(zip(ids, cosine_scores(vector, rows).tolist(), strict=True))


def cosine_scores(vector: np.ndarray, rows: Any) -> np.ndarray:
    """The cosine of each row with `vector`, in row order (rows need not be normalised)."""
    mat = np.asarray(rows, dtype=np.float32)
    q = np.asarray(vector, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1) * (np.linalg.norm(q) or 1.0)
    return mat @ q / np.where(norms == 0, 1.0, norms)


def matches(metadata: dict[str, Any], where: Where | None) -> bool:
    """Evaluate a Chroma-style `where` filter against one metadata dict."""
    if not where:
        return True
    for key, cond in where.items():
        if key == "$and":
            if not all(matches(metadata, c) for c in cond):
                return False
        elif key == "$or":
            if not any(matches(metadata, c) for c in cond):
                return False
        elif isinstance(cond, dict):
            for op, operand in cond.items():
                if op not in _OPS:
                    raise ValueError(f"unsupported filter operator {op!r}")
                if not _OPS[op](metadata.get(key), operand):
                    return False
        elif metadata.get(key) != cond:
            return False
    return True


class InMemoryVectorStore:
    """Exact cosine search over a matrix: the test double and a correctness oracle for Chroma."""

    def __init__(self) -> None:
        self._rows: dict[str, StoredItem] = {}
        self._vecs: dict[str, np.ndarray] = {}

    def add(self, ids: list[str], vectors: np.ndarray, documents: list[str], metadatas: list[dict[str, Any]]) -> None:
        for i, row_id in enumerate(ids):
            self._rows[row_id] = StoredItem(row_id, documents[i], dict(metadatas[i]))
            self._vecs[row_id] = np.asarray(vectors[i], dtype=np.float32)

    def get(self, ids: list[str]) -> list[StoredItem]:
        return [self._rows[i] for i in ids if i in self._rows]

    def delete(self, ids: list[str]) -> None:
        for row_id in ids:
            self._rows.pop(row_id, None)
            self._vecs.pop(row_id, None)

    def query(self, vector: np.ndarray, k: int, where: Where | None = None,
              bare: bool = False) -> list[tuple[StoredItem, float]]:
        ids = [i for i, item in self._rows.items() if matches(item.metadata, where)]
        if not ids or k <= 0:
            return []
        sims = cosines(vector, ids, [self._vecs[i] for i in ids])
        return [(self._rows[i], sims[i]) for i in sorted(ids, key=lambda i: -sims[i])[:k]]

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        return {i: self._vecs[i] for i in ids if i in self._vecs}

    def find(self, where: Where, limit: int | None = None) -> list[StoredItem]:
        found = [item for item in self._rows.values() if matches(item.metadata, where)]
        return found if limit is None else found[:limit]

    def count(self) -> int:
        return len(self._rows)

    def iter_all(self, batch: int = 1000) -> Iterator[StoredItem]:
        yield from list(self._rows.values())
