"""Server mode: a `chroma run` on loopback, reached through HttpClient, stopped by the test."""

from __future__ import annotations

import pytest

from mettaclaw.config import Config
from mettaclaw.memory.errors import EmbedderMismatch
from mettaclaw.memory.index.longterm import LongTermMemory, open_longterm
from mettaclaw.memory.stores.chroma import ChromaVectorStore
from mettaclaw.memory.stores.embedders import HashEmbedder, make_embedder, signature

pytestmark = pytest.mark.slow


def test_server_round_trip_through_long_term_memory(chroma_server, tmp_path) -> None:
    config = Config(chromaMode="server", chromaPort=chroma_server, embeddingprovider="hash",
                    memoryDir=str(tmp_path / "mem"))
    ltm = open_longterm(config, make_embedder(config))
    written = ltm.remember("the server keeps the grocery list", tags=["shop"], source="chat", time="2024-06-01")
    dup = ltm.remember("the server keeps the grocery list", time="2024-06-02 10:00:00")
    assert not dup.created and dup.id == written.id
    assert ltm.query("grocery list", limit=1, mode="vector")[0].id == written.id
    ltm.close()
    # Another client (another process, in real use) sees the same memory after a fresh open.
    other = LongTermMemory(HashEmbedder(), ChromaVectorStore.server("127.0.0.1", chroma_server,
                                                                    embedder_signature=signature(HashEmbedder())))
    hit = other.query("where is the grocery list", source="chat", tags=["shop"])[0]
    assert (hit.id, hit.time, hit.source) == (written.id, "2024-06-02 10:00:00", "chat")
    assert other.forget(written.id) and other.vector_store.count() == 0
    with pytest.raises(EmbedderMismatch):
        ChromaVectorStore.server("127.0.0.1", chroma_server, embedder_signature="openai:text-embedding-3-small:1536")


def test_a_second_memory_folder_on_one_chroma_server_is_refused(chroma_server, tmp_path) -> None:
    """Each folder's trace, BM25 index and semantic store sit beside its vectors: two folders writing
    one server collection would contradict each other unseen, so the second is refused by name."""
    from mettaclaw.config import load_config
    from mettaclaw.memory import open_memory
    from mettaclaw.memory.errors import StoreLocked

    def config(folder: str):
        return load_config([f"memoryDir={tmp_path / folder}", "chromaMode=server", f"chromaPort={chroma_server}",
                            "embeddingprovider=hash", f"knowledgePriorsDir={tmp_path / 'none'}"], env={})

    first = open_memory(config("one"), dream=False)
    note = first.remember("the ladder is in the barn", time="2024-06-01 10:00:00", source="chat")
    first.close()
    with pytest.raises(StoreLocked, match="belongs to another memory folder.*memoryServer=URL"):
        open_memory(config("two"), dream=False)
    with pytest.raises(StoreLocked, match="belongs to another memory folder"):  # not AgentLocked: released
        open_memory(config("two"), dream=False)
    again = open_memory(config("one"), dream=False)  # the same folder opens its own collections again
    try:
        assert again.text_of(note.id) == "the ladder is in the barn"
    finally:
        again.close()
