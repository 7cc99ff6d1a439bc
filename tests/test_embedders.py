"""Embedders: one interface, normalised rows, known dimensions before any model loads."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from mettaclaw.config import Config
from mettaclaw.memory.stores.embedders import (
    HashEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    make_embedder,
    signature,
)


class FakeOpenAIClient:
    """Stands in for openai.OpenAI: returns rows out of order, as the API may."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.calls: list[list[str]] = []
        self.embeddings = SimpleNamespace(create=self._create)

    def _create(self, model: str, input: list[str], **kwargs):  # noqa: A002 - the API's own name
        self.calls.append(list(input))
        data = [SimpleNamespace(index=i, embedding=[float(len(t)), 1.0] + [0.0] * (self.dim - 2))
                for i, t in enumerate(input)]
        return SimpleNamespace(data=list(reversed(data)))


def test_make_embedder_follows_config() -> None:
    assert isinstance(make_embedder(Config(embeddingprovider="hash")), HashEmbedder)
    local = make_embedder(Config(embeddingprovider="local"))
    assert isinstance(local, SentenceTransformerEmbedder)
    assert local._model is None, "constructing the local embedder must not load the model"
    assert signature(local) == "st:all-MiniLM-L6-v2:384"


def test_the_openai_embedder_takes_its_key_from_the_variable_the_config_names(monkeypatch) -> None:
    from mettaclaw.config import ConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MY_KEY", "sk-test")
    remote = make_embedder(Config(embeddingprovider="openai", embeddingModel="text-embedding-3-large", apiKeyEnv="MY_KEY"))
    assert signature(remote) == "openai:text-embedding-3-large:3072" and remote._api_key == "sk-test"
    with pytest.raises(ConfigError, match="needs an API key in the environment variable OPENAI_API_KEY"):
        make_embedder(Config(embeddingprovider="openai"))


def test_openai_embedder_normalises_and_keeps_order() -> None:
    client = FakeOpenAIClient(dim=8)
    emb = OpenAIEmbedder("custom-model", dim=8, client=client, batch_size=2)
    rows = emb.embed(["a", "bbb", "cc"])
    assert rows.shape == (3, 8) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0)
    assert rows[0, 0] < rows[2, 0] < rows[1, 0], "rows must follow input order, not response order"
    assert client.calls == [["a", "bbb"], ["cc"]]


def test_openai_embedder_refuses_unknown_dimension_and_missing_key() -> None:
    with pytest.raises(ValueError, match="dim="):
        OpenAIEmbedder("some-new-model")
    with pytest.raises(RuntimeError, match="API key"):
        OpenAIEmbedder("text-embedding-3-small").embed(["x"])


def test_openai_embedder_refuses_wrong_dimension_reply() -> None:
    emb = OpenAIEmbedder("custom-model", dim=4, client=FakeOpenAIClient(dim=6))
    with pytest.raises(RuntimeError, match="6-d"):
        emb.embed(["x"])


def test_hash_embedder_is_deterministic_and_normalised() -> None:
    a, b = HashEmbedder().embed(["the cat sat"]), HashEmbedder().embed(["the cat sat"])
    assert np.array_equal(a, b)
    assert np.isclose(np.linalg.norm(a[0]), 1.0)
    assert HashEmbedder().embed([]).shape == (0, 64)


@pytest.mark.slow
def test_sentence_transformer_loads_offline_and_ranks_paraphrase_first() -> None:
    emb = SentenceTransformerEmbedder()
    rows = emb.embed(["A cat is sleeping on the sofa.", "A kitten naps on the couch.", "Stock prices fell sharply."])
    assert rows.shape == (3, 384)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert rows[0] @ rows[1] > rows[0] @ rows[2] + 0.3
    assert emb.embed([]).shape == (0, 384)
