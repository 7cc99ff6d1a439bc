"""The memory index's sentence vectors: each row's sentences embedded, for ranking a long row by its
best sentence (recall/relevance.py).

Why they are kept on disk: recall compares the sentences of up to 200 pooled candidates with every
query. Kept in memory only, they would be gone after each restart (and past the cache's 20,000
rows), and a query would embed the sentences of every pooled row again, many times the cost of the
rest of the ranking (docs/decisions/0003). Computed in the same embedding call as their row, they
cost nothing extra at write.

Why a store of their own (keyed_vectors.py) and not the vector store: sentences are a ranking aid,
not memories; they are only ever read by row id, never searched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mettaclaw.memory.core.text import measured_parts
from mettaclaw.memory.stores.keyed_vectors import InMemoryKeyedVectors, KeyedVectors, text_digest

# How a row's text was split into labelled sentences: part of what each entry is checked against, so
# vectors split another way (a summary's "Ann: ..." once embedded as "Sam: Ann: ...") are made again
# when next asked for, not read as this split's. 2: the one sentence rule (text.sentence_starts), under
# which a title's or an initial's period ends no sentence. 4: a long text by its passages (text.passages), a
# dream record by its sentences.
SPLIT = "labels-per-sentence-4"
DERIVED_KIND = "derived"  # the kind of a dream record's mirror row (memory/mirror.py)


def _digest(text: str) -> str:
    return text_digest(f"{SPLIT}\n{text}")


def sentence_parts(text: str, meta: dict[str, Any], known: frozenset[str] = frozenset()) -> list[str] | None:
    """A row's sentences, or a long row's passages (text.passages; labelled with who said them, `known`:
    the senders' names, text.label) when its best part is not simply the row. A dream record's row is
    measured by its sentences however long: it is a list of statements, each from its own episode."""
    found = measured_parts(text, known, record=meta.get("kind") == DERIVED_KIND)
    return found if len(found) > 1 or found[0] != text or meta.get("breadcrumb") else None


class SentenceVectors:
    """The rows' sentence vectors as recall asks for them: from the store, else embedded now."""

    def __init__(self, embed: Callable[[list[str]], Any], store: KeyedVectors | None = None) -> None:
        self.embed = embed
        self.store: KeyedVectors = store if store is not None else InMemoryKeyedVectors()

    def keep(self, parts: dict[str, tuple[str, list[str]]], vectors: Any) -> None:
        """Store the vectors of `parts` (row id -> (its text, its sentences)), given one after another."""
        pos = 0
        for row_id, (text, found) in parts.items():
            self.store.put(row_id, _digest(text), np.asarray(vectors[pos : pos + len(found)], dtype=np.float16))
            pos += len(found)

    def forget(self, row_id: str) -> None:
        self.store.forget(row_id)

    def of(self, rows: dict[str, tuple[str, dict[str, Any]]], known: frozenset[str] = frozenset()) -> dict[str, Any]:
        """The sentence vectors of those rows (id -> (text, metadata)) that have several sentences (or a
        breadcrumb); rows the store lacks are embedded now, in one call, and stored (`known`: the
        senders' names, as `sentence_parts` takes them)."""
        out: dict[str, Any] = {}
        missing: dict[str, tuple[str, list[str]]] = {}
        for row_id, (text, meta) in rows.items():
            found = self.store.get(row_id, _digest(text))
            if found is not None:
                out[row_id] = found
            elif parts := sentence_parts(text, meta, known):
                missing[row_id] = (text, parts)
        if missing:
            vectors = np.asarray(self.embed([s for _, p in missing.values() for s in p]), dtype=np.float16)
            self.keep(missing, vectors)
            pos = 0
            for row_id, (_, parts) in missing.items():
                out[row_id] = vectors[pos : pos + len(parts)]
                pos += len(parts)
        return out

    def close(self) -> None:
        self.store.close()
