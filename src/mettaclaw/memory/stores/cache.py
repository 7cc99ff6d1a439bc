"""An embedder that remembers its most recent texts (a few thousand, and the room its users reserve):
a dream re-confirms the same facts and patterns batch after batch, and each confirmation goes through
reconciliation, which embeds the text. Same name and dimension as the wrapped embedder, so stores see
the same signature.

One cache serves the turn's thread and the dream's at once, so its table is guarded; the model is
called outside the guard, so a turn embedding a question never waits for a dream embedding thousands
of sentences."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np


class CachedEmbedder:
    def __init__(self, inner: Any, size: int = 4096) -> None:
        if size < 1:
            raise ValueError(f"cache size must be at least 1, not {size}")
        self.inner, self.size = inner, size
        self.name, self.dim = inner.name, inner.dim
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._guard = threading.Lock()
        self.hits = self.misses = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        wanted = list(dict.fromkeys(texts))
        with self._guard:
            found = {t: self._cache[t] for t in wanted if t in self._cache}
            for text in found:
                self._cache.move_to_end(text)
            missing = [t for t in wanted if t not in found]
            self.misses += len(missing)
            self.hits += len(texts) - len(missing)
        if missing:
            fresh = [np.asarray(row, dtype=np.float32) for row in self.inner.embed(missing)]
            found.update(zip(missing, fresh, strict=True))
            with self._guard:
                self._cache.update(zip(missing, fresh, strict=True))
                self._trim()
        return np.stack([found[t] for t in texts]) if texts else np.zeros((0, self.dim), dtype=np.float32)

    def keep(self, vectors: dict[str, np.ndarray]) -> None:
        """Take vectors the wrapped model already computed for these texts elsewhere (the memory index
        embedded each episode when its turn was written): the dream's records quote those episodes, so
        their sentences are then found here instead of being embedded again."""
        with self._guard:
            for text, vector in vectors.items():
                self._cache[text] = np.asarray(vector, dtype=np.float32)
                self._cache.move_to_end(text)
            self._trim()

    def reserve(self, texts: int) -> None:
        """Hold `texts` more vectors: room for a user that re-reads that many texts every time it runs
        (a theme rebuild), which an LRU cache smaller than what it scans would evict before each reuse."""
        with self._guard:
            self.size += max(0, int(texts))

    def _trim(self) -> None:
        while len(self._cache) > self.size:
            self._cache.popitem(last=False)

    def forget(self, text: str) -> None:
        """Drop one text's vector, so its next embedding is computed again (a benchmark timing a
        question as if it were new)."""
        with self._guard:
            self._cache.pop(text, None)


def embed_ahead(embedder: Any, contents: list[str]) -> None:
    """Embed in one batched model call the contents about to be learned one at a time (each candidate
    of a dream batch, each new theme): a batch costs far less than its texts one by one, and the
    cache then answers each learn. Whitespace is collapsed as learning does, so the texts match."""
    if isinstance(embedder, CachedEmbedder) and contents:
        embedder.embed([" ".join(c.split()) for c in contents])
