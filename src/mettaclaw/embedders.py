"""Embedders behind one interface, so stores never branch on which model made a vector.

A store records `Embedder.signature` (name and dimension) and refuses to open under another one.
"""

from __future__ import annotations

import hashlib
import re
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text (shape: len(texts) x dim)."""
        ...


def signature(embedder: Embedder) -> str:
    """The identity a store records: two embedders with equal signatures give comparable vectors."""
    return f"{embedder.name}:{embedder.dim}"


_TOKEN = re.compile(r"[a-z0-9]+")


class HashEmbedder:
    """A tiny deterministic embedder for fast tests: hashed bag of words and character trigrams.

    Texts sharing words land near each other, which is enough to test ranking logic offline.
    """

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.name = "hash"

    def _features(self, text: str) -> list[str]:
        words = _TOKEN.findall(text.lower())
        grams = [w[i : i + 3] for w in words for i in range(max(1, len(w) - 2))]
        return words + grams

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out
