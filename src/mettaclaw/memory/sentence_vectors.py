"""The memory index's sentence vectors: each row's sentences embedded, for ranking a long row by its
best sentence (recall.py), kept for the most recently written or used rows only.

Why a cache and not the vector store: sentences are a ranking aid, not memories; computed in the
same embedding call as their row, they cost nothing extra at write, and a row that fell out of the
cache is embedded again when a query needs it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from .text import labelled_sentences

CAPACITY = 20_000  # rows whose sentence vectors stay in memory (about 40 MB of float16 with MiniLM)


def sentence_parts(text: str, meta: dict[str, Any]) -> list[str] | None:
    """A row's sentences (labelled with who said them) when its best sentence is not simply the row."""
    found = labelled_sentences(text)
    return found if len(found) > 1 or found[0] != text or meta.get("breadcrumb") else None


class SentenceVectors:
    """Row id -> its sentence vectors (float16), least recently written or used evicted first."""

    def __init__(self, embed: Callable[[list[str]], Any], capacity: int = CAPACITY) -> None:
        self.embed, self.capacity = embed, capacity
        self._rows: OrderedDict[str, Any] = OrderedDict()

    def keep(self, parts: dict[str, list[str]], vectors: Any) -> None:
        """Store the vectors of `parts` (row id -> its sentences), given one after another in `vectors`."""
        pos = 0
        for row_id, found in parts.items():
            self._rows[row_id] = np.asarray(vectors[pos : pos + len(found)], dtype=np.float16)
            self._rows.move_to_end(row_id)
            pos += len(found)
        while len(self._rows) > self.capacity:
            self._rows.popitem(last=False)

    def forget(self, row_id: str) -> None:
        self._rows.pop(row_id, None)

    def of(self, rows: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        """The sentence vectors of those rows (id -> (text, metadata)) that have several sentences (or a
        breadcrumb); rows missing from the cache are embedded now, in one call."""
        out, missing = {}, {}
        for row_id, (text, meta) in rows.items():
            if row_id in self._rows:
                self._rows.move_to_end(row_id)
                out[row_id] = self._rows[row_id]
            elif found := sentence_parts(text, meta):
                missing[row_id] = found
        if missing:
            self.keep(missing, self.embed([s for p in missing.values() for s in p]))
            out.update({i: self._rows[i] for i in missing if i in self._rows})
        return out
