"""Semantic memory: what things mean, apart from what happened (docs/memory.md, "Semantic memory").

Build it with `SemanticMemory(embedder, vector_store, record_store)` (tests: HashEmbedder,
InMemoryVectorStore, InMemorySemanticStore) or `open_semantic(config, embedder)` for the real stack:
SQLite at `memory/semantic/records.sqlite3` and the Chroma collection "semantic" (embedded under
`memory/semantic/chroma`, or the configured server). Nothing heavy is imported here.

Public API (SemanticMemory; errors the caller caused raise ValueError / LookupError with the cause):
- `learn(content, *, name=None, kind="fact", category=None, tags=(), atom=None, source_episodes=(),
  provenance="direct_ingestion", valid_from=None) -> LearnResult(id, action, superseded, ...)`,
  action in created | reinforced | merged | superseded; every write is reconciled first.
- `relate(a, relation, b, weight=None) -> Edge` (ids or names; unknown names become concepts).
- `recall(query, *, mode="semantic"|"logical"|"hybrid", limit=10, tags_all/tags_any/tags_none, kind,
  category, min_confidence, time_from, time_to, name_pattern, as_of=None, include_history=False,
  context=(), explain=False, touch=True) -> list[RecallResult]` (record, score, provenance, parts);
  `touch` notes the use, and `apply_touches()` (run before each write and at close) writes it.
- `supersede(old_id_or_name, new_content)`, `forget(id_or_name)`, `history(id_or_name)`,
  `changes(id)`, `provenance(id, trace)`, `tags()`, `stats()`, `knowledge_block(message, budget_chars)`,
  `remove(id)`, `flush()`, `close()`; and the layer protocol (`name = "semantic"`, get/stats/len/iter/
  on_capture/on_delete). Scoring (gathering candidates per mode, ACT-R activation): `scoring.py`.
Skills for the agent: `mettaclaw.skills.semantic` reads the model's text for `learn`, `relate`, `recall`,
`supersede` and `history`, each declared on its MemorySkills method (skills/memory.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from .memory import SemanticMemory
from .records import Edge, LearnResult, RecallResult, SemanticRecord
from .store import InMemorySemanticStore, RecordFilter, SemanticStore

__all__ = ["Edge", "InMemorySemanticStore", "LearnResult", "RecallResult", "RecordFilter", "SemanticMemory",
           "SemanticRecord", "SemanticStore", "open_semantic"]

COLLECTION = "semantic"
log = logging.getLogger(__name__)


def open_semantic(config: Any, embedder: Any, clock: Callable[[], float] = time.time) -> SemanticMemory:
    """The real layer: records in `memory/semantic/records.sqlite3`, vectors in Chroma's "semantic"
    collection (its own embedded folder `memory/semantic/chroma`, or the configured server)."""
    from mettaclaw.memory.stores.embedders import signature
    from mettaclaw.memory.stores.vectors import InMemoryVectorStore

    from .sqlite_store import SqliteSemanticStore

    folder = config.memory_path("semantic")
    sig = signature(embedder)
    if config.chromaMode == "embedded":
        from mettaclaw.memory.stores.chroma import ChromaVectorStore

        vectors: Any = ChromaVectorStore.embedded(folder / "chroma", embedder_signature=sig, collection=COLLECTION)
    elif config.chromaMode == "server":
        from mettaclaw.memory.stores.chroma import ChromaVectorStore, folder_id

        vectors = ChromaVectorStore.server(config.chromaHost, config.chromaPort, embedder_signature=sig,
                                           collection=COLLECTION, owner=folder_id(config.memory_path()))
    else:
        vectors = InMemoryVectorStore()
    try:
        records = SqliteSemanticStore(folder / "records.sqlite3")
        if getattr(vectors, "vectors_lost", None):  # the records keep their vectors: all go to the index again
            records.queue_vectors(records.ids())
            log.warning("%s: the semantic records' vectors are written again from records.sqlite3", vectors.vectors_lost)
            vectors.rebuilt()  # the queue is durable: a kill before the index has them replays it
    except BaseException:
        getattr(vectors, "close", lambda: None)()
        raise
    try:
        return SemanticMemory(embedder, vectors, records, clock=clock)
    except BaseException:
        records.close()
        getattr(vectors, "close", lambda: None)()
        raise
