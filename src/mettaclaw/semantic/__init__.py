"""Semantic memory: what things mean, apart from what happened (spec: memory.md).

Use `SemanticMemory(embedder, vector_store, record_store)` directly (tests: HashEmbedder,
InMemoryVectorStore, InMemorySemanticStore) or `open_semantic(config, embedder)` for the real stack:
SQLite under `memory/semantic/` and a Chroma collection named "semantic". Nothing heavy is imported here.
"""

from __future__ import annotations

from typing import Any

from .memory import SemanticMemory
from .records import Edge, LearnResult, RecallResult, SemanticRecord
from .store import InMemorySemanticStore, RecordFilter, SemanticStore

__all__ = ["Edge", "InMemorySemanticStore", "LearnResult", "RecallResult", "RecordFilter", "SemanticMemory",
           "SemanticRecord", "SemanticStore", "open_semantic"]

COLLECTION = "semantic"


def open_semantic(config: Any, embedder: Any) -> SemanticMemory:
    """The real layer: records in `memory/semantic/records.sqlite3`, vectors in Chroma's "semantic"
    collection (its own embedded folder `memory/semantic/chroma`, or the configured server)."""
    from mettaclaw.embedders import signature
    from mettaclaw.vectorstore import InMemoryVectorStore

    from .sqlite_store import SqliteSemanticStore

    folder = config.memory_path("semantic")
    sig = signature(embedder)
    if config.chromaMode == "embedded":
        from mettaclaw.chroma_store import ChromaVectorStore

        vectors: Any = ChromaVectorStore.embedded(folder / "chroma", embedder_signature=sig, collection=COLLECTION)
    elif config.chromaMode == "server":
        from mettaclaw.chroma_store import ChromaVectorStore

        vectors = ChromaVectorStore.server(config.chromaHost, config.chromaPort, embedder_signature=sig,
                                           collection=COLLECTION)
    else:
        vectors = InMemoryVectorStore()
    try:
        records = SqliteSemanticStore(folder / "records.sqlite3")
    except BaseException:
        getattr(vectors, "close", lambda: None)()
        raise
    try:
        return SemanticMemory(embedder, vectors, records)
    except BaseException:
        records.close()
        getattr(vectors, "close", lambda: None)()
        raise
