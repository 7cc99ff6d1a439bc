"""Semantic memory on the real stack: SQLite + embedded Chroma across a restart, and the real
all-MiniLM-L6-v2 embedder on paraphrases and unrelated facts (slow)."""

import random

import pytest
from test_semantic_reconcile import PARAPHRASES

from mettaclaw.config import load_config
from mettaclaw.memory.errors import EmbedderMismatch
from mettaclaw.memory.semantic import InMemorySemanticStore, SemanticMemory, open_semantic
from mettaclaw.memory.semantic.factgen import contradicting_pairs, unrelated_pairs
from mettaclaw.memory.stores.embedders import HashEmbedder
from mettaclaw.memory.stores.vectors import InMemoryVectorStore


def config_for(tmp_path, mode="embedded"):
    return load_config([f"memoryDir={tmp_path / 'memory'}", f"chromaMode={mode}", "embeddingprovider=hash"], env={})


def test_open_semantic_persists_records_vectors_and_graph_across_restart(tmp_path):
    cfg = config_for(tmp_path)
    mem = open_semantic(cfg, HashEmbedder(256))
    old = mem.learn("Judy lives in Lisbon", tags=["person"], source_episodes=["ep-0"])
    new = mem.learn("Judy moved to Madrid", tags=["person"])
    mem.relate("Judy", "MENTORS", "Niaj")
    mem.close()
    assert (cfg.memory_path("semantic") / "records.sqlite3").is_file()
    assert (cfg.memory_path("semantic") / "chroma").is_dir()

    again = open_semantic(cfg, HashEmbedder(256))
    try:
        hits = {h.id: h for h in again.recall("where does Judy live", explain=True)}
        assert new.id in hits and old.id not in hits
        assert again.vectors.count() == 4  # two facts, two concepts: vectors persisted in Chroma
        assert hits[new.id].parts["cosine"] > 0  # found by the vector search, the record from SQLite
        assert [r.id for r in again.history(new.id)] == [old.id, new.id]
        assert "MENTORS" in again.relations.types()
        assert again.learn("Judy moved to Madrid").action == "reinforced"
        assert "Judy moved to Madrid" in again.knowledge_block("Where does Judy live now?", 500)
    finally:
        again.close()
    with pytest.raises(EmbedderMismatch, match="embedder"):
        open_semantic(cfg, HashEmbedder(64))


def test_open_semantic_in_memory_mode(tmp_path):
    mem = open_semantic(config_for(tmp_path, "memory"), HashEmbedder(256))
    assert mem.learn("Olivia speaks Greek").action == "created"
    mem.close()


@pytest.mark.slow
def test_real_embedder_paraphrases_and_unrelated_facts():
    from mettaclaw.memory.stores.embedders import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    mem = SemanticMemory(emb, InMemoryVectorStore(), InMemorySemanticStore())
    for group in PARAPHRASES:
        for sentence in group:
            mem.learn(sentence)
    assert len(mem) == 5
    rng = random.Random(3)
    false = 0
    sample = rng.sample(unrelated_pairs(), 40)
    for a, b, _ in sample:
        m = SemanticMemory(emb, InMemoryVectorStore(), InMemorySemanticStore())
        m.learn(a)
        false += m.learn(b).action != "created"  # neither superseded nor merged into the first
    assert false == 0
    for a, b, _ in rng.sample(contradicting_pairs(), 10):
        m = SemanticMemory(emb, InMemoryVectorStore(), InMemorySemanticStore())
        m.learn(a)
        assert m.learn(b).action == "superseded"
