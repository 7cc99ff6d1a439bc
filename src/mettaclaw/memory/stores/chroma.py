"""ChromaDB behind the VectorStore Protocol: embedded (one process, locked) or a `chroma run` server.

Why the care: the reference mixed vectors of two embedders in one collection after a provider
switch, and two processes writing one embedded store silently lost vectors. So the collection
records the embedder signature and refuses another one, and the embedded folder is held under a
file lock for the life of the store. Chroma's default embedding function downloads a model, so it
is never used: vectors always come from the project's embedder.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from mettaclaw.memory.errors import EmbedderMismatch, StoreDamaged, StoreLocked, StoreUnavailable
from mettaclaw.textutil import atomic_write, move_aside

from .vectors import StoredItem, Where

log = logging.getLogger(__name__)
SEGMENT_RETRIES = (0.05, 0.2, 1.0)  # seconds before asking again (ChromaVectorStore.query)

# Default HNSW settings (docs/decisions/0001): Chroma's defaults (ef_search 10) miss many of the true
# nearest rows at 100k. sync_threshold: embedded Chroma 1.5 persists its HNSW index every this many
# writes, and until then each upsert costs more the more writes wait unsynced; 100 (its smallest, the
# batch size) keeps `remember` cheap over a cycle for about as many bytes written.
DEFAULT_HNSW: dict[str, Any] = {"space": "cosine", "ef_construction": 200, "ef_search": 128, "max_neighbors": 32,
                                "sync_threshold": 100}
ADJUSTABLE_HNSW = ("ef_search", "sync_threshold")  # what Chroma lets an existing collection change
SIGNATURE_KEY = "mettaclaw_embedder"
OWNER_KEY = "mettaclaw_memory_folder"  # which memory folder a server collection belongs to
STORE_ID = "store-id"  # the file in the memory folder holding the id its server collections are claimed with
LOCK_NAME = "mettaclaw.memory.lock"
REBUILDING = "mettaclaw.rebuilding"  # present while a damaged index is written back (ChromaVectorStore.rebuilt)


DAMAGED_SQLITE = ("(code: 11)", "(code: 26)")  # SQLITE_CORRUPT, SQLITE_NOTADB as Chroma's Rust side reports them
# How Chroma 1.5 reports a vector segment whose files it cannot use (measured by damaging each file):
# a pickle cut short or overwritten, a header it cannot load, rows it cannot find or read.
DAMAGED_VECTOR_INDEX = ("Error deserializing pickle", "Error loading hnsw index", "Error finding id",
                        "Error getting embedding")
MOSTLY_DELETED = (100, 0.3)  # deleted rows (at least, and share of the graph) that have it built anew
PROBE_ROWS = 16  # stored vectors looked up again at open (ChromaVectorStore._unreadable_vectors)
# The header hnswlib saves (header.bin, 100 bytes): format, offsetLevel0, max_elements, cur_element_count,
# size_data_per_element, label_offset, offsetData, maxlevel, enterpoint, maxM, maxM0, M, mult, ef_construction.
HNSW_HEADER = struct.Struct("<iQQQQQQiIQQQdQ")


def _settings() -> Any:  # chromadb's Settings, imported only when a store opens
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False)


def _saved_vector_segments(folder: Path) -> list[str]:
    """The vector segments of an embedded store that Chroma has saved to disk (it records how far each
    got in `max_seq_id` once it has): those whose files must be there. Empty when chroma.sqlite3 is
    missing, unreadable or not laid out as Chroma 1.5 lays it out: Chroma's own open then judges it."""
    db = folder / "chroma.sqlite3"
    if not db.is_file():
        return []
    try:
        with contextlib.closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as con:
            rows = con.execute("SELECT s.id FROM segments s JOIN max_seq_id m ON m.segment_id = s.id "
                               "WHERE s.scope = 'VECTOR'").fetchall()
    except sqlite3.Error:
        return []
    return [str(row[0]) for row in rows if str(row[0]) and "/" not in str(row[0]) and str(row[0]) not in (".", "..")]


def _cut_short(segment: Path) -> str | None:
    """Why a saved vector segment's files cannot hold its index, or None when their sizes agree with
    its header. A process killed while Chroma rewrites them (it writes them in place) left an empty
    pickle, and Chroma then refused every read of the collection; a deleted folder made it answer
    from an empty index."""
    if not segment.is_dir():
        return "its folder is missing"
    sizes = {name: (segment / name).stat().st_size if (segment / name).is_file() else -1
             for name in ("header.bin", "data_level0.bin", "length.bin", "index_metadata.pickle")}
    if sizes["header.bin"] != HNSW_HEADER.size:
        return f"header.bin holds {sizes['header.bin']} bytes, not {HNSW_HEADER.size}"
    fields = HNSW_HEADER.unpack((segment / "header.bin").read_bytes())
    capacity, count, per_row = fields[2], fields[3], fields[4]
    if count == 0 and sizes["index_metadata.pickle"] < 0:
        return None  # started anew (as after a repair) and not saved since: Chroma replays its log into it
    if sizes["index_metadata.pickle"] <= 0:
        return "index_metadata.pickle is missing or empty"
    # a saved index writes its rows (`count`) or its whole capacity, as it was loaded or made new
    if not (count * per_row <= sizes["data_level0.bin"] <= max(count, capacity) * per_row
            and 4 * count <= sizes["length.bin"] <= 4 * max(count, capacity)):
        return f"its files are shorter than the {count} rows its header names, or longer than its capacity"
    return None


def _mostly_deleted(folder: Path, live: int) -> str | None:
    """Why the saved index should be built anew though nothing in it is damaged: most of its rows are
    deleted ones. Chroma 1.5.9 keeps a deleted row in its graph, and after many deletes and upserts
    live rows drop out of every search while `get` still returns them (chroma-core/chroma#7758; here
    a graph 44% deleted lost 249 of 300 rows to one 38-row upsert). Built anew, it holds the live rows."""
    for seg in _saved_vector_segments(folder):
        header = folder / seg / "header.bin"
        if header.is_file() and header.stat().st_size == HNSW_HEADER.size:
            total = HNSW_HEADER.unpack(header.read_bytes())[3]
            deleted = total - live
            if deleted >= MOSTLY_DELETED[0] and deleted > MOSTLY_DELETED[1] * total:
                return f"{deleted} of its {total} rows are deleted ones, which Chroma keeps in its graph"
    return None


def _set_aside(folder: Path, segments: list[str]) -> list[Path]:
    """Move these vector segments' folders aside (kept, named .corrupt-<time>) so Chroma starts them
    anew; the caller writes their rows' vectors again."""
    return [move_aside(folder / seg) if (folder / seg).exists() else folder / seg for seg in segments]


def _clean_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """Chroma accepts str/int/float/bool values only: drop None, refuse the rest loudly."""
    out: dict[str, Any] = {}
    for key, value in meta.items():
        if value is None:
            continue
        if not isinstance(value, str | int | float | bool):
            raise TypeError(f"metadata {key!r} must be str, int, float or bool, got {type(value).__name__}")
        out[key] = value
    return out


class ChromaVectorStore:
    """One Chroma collection holding (id, vector, document, metadata); cosine scores, higher is closer."""

    def __init__(self, client: Any, *, embedder_signature: str, collection: str = "memories",
                 hnsw: dict[str, Any] | None = None, lock: Any = None, description: str = "chroma",
                 owner: str | None = None) -> None:
        self._client = client
        self._lock = lock
        self.description = description
        self.embedder_signature = embedder_signature
        self.vectors_lost: str | None = None  # what was wrong with the vector index found at open
        # the row count, kept between writes where this process is the one writer (the folder lock):
        # Chroma counts every row, and opening a memory asks more than once (checks, snapshot)
        self._rows: int | None = None
        self._counting = threading.Lock()  # the flusher thread writes while a turn may count
        config = {"hnsw": dict(DEFAULT_HNSW if hnsw is None else hnsw)}
        try:
            self._col = client.get_or_create_collection(
                name=collection, configuration=config, metadata={SIGNATURE_KEY: embedder_signature},
                embedding_function=None,
            )
            recorded = (self._col.metadata or {}).get(SIGNATURE_KEY)
            if recorded is None:
                if self.count() > 0:
                    raise EmbedderMismatch(
                        f"collection {collection!r} in {description} holds vectors of an unrecorded embedder; "
                        f"refusing to mix them with {embedder_signature!r}"
                    )
                self._col.modify(metadata={SIGNATURE_KEY: embedder_signature})
            elif recorded != embedder_signature:
                raise EmbedderMismatch(
                    f"collection {collection!r} in {description} was made by embedder {recorded!r}; "
                    f"this run uses {embedder_signature!r}. Use the same embedder (embeddingprovider), "
                    "or point memoryDir at a fresh folder to start a new store."
                )
            self._adjust(config["hnsw"])
            if owner is not None:
                self._claim(collection, owner)
        except BaseException:
            self.close()
            raise

    def _adjust(self, wanted: dict[str, Any]) -> None:
        """Bring a collection made with older settings to the adjustable ones asked for: Chroma applies a
        configuration only when it creates the collection."""
        current = (self._col.configuration or {}).get("hnsw") or {}
        changes = {k: wanted[k] for k in ADJUSTABLE_HNSW if k in wanted and current.get(k) != wanted[k]}
        if changes:
            self._col.modify(configuration={"hnsw": changes})

    def _claim(self, collection: str, owner: str) -> None:
        """A server collection serves one memory folder: the folder's trace, BM25 index and semantic
        store sit beside the vectors, and a second folder's process would contradict them unseen."""
        meta = dict(self._col.metadata or {})
        claimed = meta.get(OWNER_KEY)
        if claimed is None:
            self._col.modify(metadata={**meta, OWNER_KEY: owner})
        elif claimed != owner:
            raise StoreLocked(
                f"collection {collection!r} on {self.description} belongs to another memory folder ({claimed}); "
                "one memory folder per Chroma server. To share a memory between agents, run the memory "
                "server (python -m mettaclaw.mcp transport=http) and give each agent memoryServer=URL")

    def rebuilt(self) -> None:
        """Every row is written back to the index set aside at open (`vectors_lost`)."""
        if self.vectors_lost is not None:
            Path(self.description, REBUILDING).unlink(missing_ok=True)
            self.vectors_lost = None

    def _unreadable_vectors(self) -> str | None:
        """Why the collection's vector index cannot serve (None when it can): stored vectors read back
        and each looked up again, where it must be its own nearest neighbour (or one with the same
        vector). A pickle or a row Chroma cannot read fails every query; a graph that deletes and
        upserts have broken (chroma-core/chroma#7758) answers without the rows it lost, every file the
        right size. Checked: the rows written last, which a save cut short holds, and some others."""
        import random

        try:
            total = self.count()
            if not total:
                return None
            starts = {max(0, total - PROBE_ROWS // 2), random.randrange(max(1, total - PROBE_ROWS // 2))}
            # a vector of no direction (an embedder's answer for a text of no word: the hash one's for
            # "👍") is at no cosine distance from anything, itself included: not a sign of damage, and
            # two such rows made the folder unopenable as "damaged"
            vectors = [v for start in starts
                       for v in self._col.get(limit=PROBE_ROWS // 2, offset=start, include=["embeddings"])["embeddings"]
                       if np.any(v)]
            if not vectors:
                return None
            found = self._col.query(query_embeddings=vectors, n_results=1, include=["distances"])
        except Exception as err:  # chromadb.errors.InternalError
            if any(sign in str(err) for sign in DAMAGED_VECTOR_INDEX):
                return str(err)
            raise
        lost = sum(1 for d in found["distances"] if not d or d[0] > 1e-3)
        return f"{lost} of {len(vectors)} stored vectors are not found by a search" if lost else None

    # --- constructors
    @classmethod
    def embedded(cls, path: str | Path, *, embedder_signature: str, collection: str = "memories",
                 hnsw: dict[str, Any] | None = None) -> ChromaVectorStore:
        """A PersistentClient under `path`, locked so a second writer is refused instead of losing data."""
        import chromadb
        from filelock import FileLock, Timeout

        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(folder / LOCK_NAME), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise StoreLocked(
                f"the memory store {folder} is in use by another process (lock {folder / LOCK_NAME}); "
                "stop the other agent, or use chromaMode=server for several processes"
            ) from None
        try:
            rebuilding = folder / REBUILDING
            saved = _saved_vector_segments(folder)
            damaged = {seg: why for seg in saved if (why := _cut_short(folder / seg))}
            if rebuilding.exists():  # a rebuild was cut short: the index may hold only some of the rows
                damaged = {**dict.fromkeys(saved, "its rebuild was cut short"), **damaged}
            moved = _set_aside(folder, list(damaged))
            client = chromadb.PersistentClient(path=str(folder), settings=_settings())
            store = cls(client, embedder_signature=embedder_signature, collection=collection, hnsw=hnsw,
                        lock=lock, description=str(folder))
            if not moved and (why := store._unreadable_vectors() or _mostly_deleted(folder, store.count())):
                store._client.close()  # the lock stays held: no one else may open the folder meanwhile
                damaged = dict.fromkeys(_saved_vector_segments(folder), why)
                if not damaged:
                    raise StoreDamaged(f"the vector index in {folder} cannot be read ({why})")
                moved = _set_aside(folder, list(damaged))
                client = chromadb.PersistentClient(path=str(folder), settings=_settings())
                store = cls(client, embedder_signature=embedder_signature, collection=collection, hnsw=hnsw,
                            lock=lock, description=str(folder))
            if damaged or rebuilding.exists():
                reasons = "; ".join(f"{seg}: {why}" for seg, why in damaged.items()) or "its rebuild was cut short"
                store.vectors_lost = (f"the vector index in {folder} cannot serve as it is ({reasons}); it was moved "
                                      f"aside ({', '.join(p.name for p in moved)}) and is built again from the stored rows")
                atomic_write(rebuilding, store.vectors_lost)  # until `rebuilt`: a kill meanwhile starts it over
            return store
        except Exception as err:
            lock.release()
            if any(code in str(err) for code in DAMAGED_SQLITE):
                raise StoreDamaged(
                    f"the vector store {folder} is damaged ({err}). Move the folder aside (mv {folder} "
                    f"{folder}.damaged) to start it empty: episodes are indexed again from the trace, but what "
                    "only this store held (memories stored with remember) is lost unless a copy or an export "
                    "(python -m mettaclaw.memory export) is restored") from None
            raise
        except BaseException:
            lock.release()
            raise

    @classmethod
    def server(cls, host: str, port: int, *, embedder_signature: str, collection: str = "memories",
               hnsw: dict[str, Any] | None = None, owner: str | None = None) -> ChromaVectorStore:
        """An HttpClient on a `chroma run` server, its collection claimed for the memory folder `owner`
        names (folder_id): a second memory folder on the same server is refused."""
        return cls(server_client(host, port), embedder_signature=embedder_signature, collection=collection,
                   hnsw=hnsw, description=f"chroma server {host}:{port}", owner=owner)

    # --- the VectorStore Protocol
    def add(self, ids: list[str], vectors: np.ndarray, documents: list[str], metadatas: list[dict[str, Any]]) -> None:
        if not ids:
            return
        vectors = np.asarray(vectors, dtype=np.float32)
        metas = [_clean_meta(m) for m in metadatas]
        step = max(1, int(self._client.get_max_batch_size()))
        try:
            for start in range(0, len(ids), step):
                end = start + step
                self._col.upsert(ids=list(ids[start:end]), embeddings=vectors[start:end],
                                 documents=list(documents[start:end]), metadatas=metas[start:end])
        finally:
            self._forget_count()

    def get(self, ids: list[str]) -> list[StoredItem]:
        if not ids:
            return []
        got = self._col.get(ids=list(ids), include=["documents", "metadatas"])
        by_id = {i: StoredItem(i, d or "", dict(m or {}))
                 for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)}
        return [by_id[i] for i in ids if i in by_id]

    def delete(self, ids: list[str]) -> None:
        if ids:
            try:
                self._col.delete(ids=list(ids))
            finally:
                self._forget_count()

    def query(self, vector: np.ndarray, k: int, where: Where | None = None,
              ids: list[str] | None = None, bare: bool = False) -> list[tuple[StoredItem, float]]:
        """Nearest rows; `ids` restricts the search to a candidate set the caller already filtered."""
        if k <= 0 or (ids is not None and not ids):
            return []
        include = ["distances"] if bare else ["documents", "metadatas", "distances"]
        for wait in (*SEGMENT_RETRIES, None):
            try:
                res = self._col.query(query_embeddings=[np.asarray(vector, dtype=np.float32)], n_results=k,
                                      where=where or None, ids=ids, include=include)
                break
            except Exception as err:  # chromadb.errors.InternalError, whose module differs between versions
                if wait is None or "hnsw segment reader" not in str(err):
                    raise
                # embedded Chroma 1.x, around a collection's first flush to disk, can fail a query with
                # "Error creating hnsw segment reader: Nothing found on disk" (chroma-core/chroma#4212);
                # the same query a moment later is answered (1 run in 4 of 150 remember+query pairs)
                log.warning("Chroma's vector segment was not readable yet, asking again: %s", err)
                time.sleep(wait)
        n = len(res["ids"][0])
        docs = res["documents"][0] if not bare else [""] * n
        metas = res["metadatas"][0] if not bare else [{}] * n
        return [(StoredItem(i, d or "", dict(m or {})), 1.0 - float(dist))
                for i, d, m, dist in zip(res["ids"][0], docs, metas, res["distances"][0], strict=True)]

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these rows (a `get`, cheaper than a query restricted to `ids`): the index
        keeps its own copies by id (keyed_vectors.py) and asks here only for rows it lacks."""
        if not ids:
            return {}
        got = self._col.get(ids=list(ids), include=["embeddings"])
        return {i: np.asarray(v, dtype=np.float32) for i, v in zip(got["ids"], got["embeddings"], strict=True)}

    def find(self, where: Where, limit: int | None = None) -> list[StoredItem]:
        got = self._col.get(where=where or None, limit=limit, include=["documents", "metadatas"])
        return [StoredItem(i, d or "", dict(m or {}))
                for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)]

    def count(self) -> int:
        if self._lock is None:  # a server's collection may have other writers
            return int(self._col.count())
        with self._counting:
            if self._rows is None:
                self._rows = int(self._col.count())
            return self._rows

    def _forget_count(self) -> None:
        """After a write (not before: a count taken during it would be kept as the count after it)."""
        with self._counting:
            self._rows = None

    def iter_all(self, batch: int = 1000) -> Iterator[StoredItem]:
        offset = 0
        while True:
            got = self._col.get(limit=batch, offset=offset, include=["documents", "metadatas"])
            if not got["ids"]:
                return
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True):
                yield StoredItem(i, d or "", dict(m or {}))
            offset += len(got["ids"])

    def close(self) -> None:
        """Release the client and the folder lock (idempotent)."""
        client, self._client = self._client, None
        if client is not None and hasattr(client, "close"):
            with contextlib.suppress(Exception):  # a half-open client must not hide the error that got us here
                client.close()
        if self._lock is not None and self._lock.is_locked:
            self._lock.release()


def server_client(host: str, port: int) -> Any:
    """An HttpClient on the `chroma run` server at host:port, which answered; StoreUnavailable if not."""
    import chromadb

    try:
        client = chromadb.HttpClient(host=host, port=port, settings=_settings())
        client.heartbeat()
    except Exception as err:
        raise StoreUnavailable(f"no Chroma server at {host}:{port} ({err}); start one with `chroma run`") from None
    return client


def claimed_by(client: Any, memory_dir: Path) -> set[str]:
    """The names of the server's collections claimed for the memory folder (none before it has an id)."""
    path = Path(memory_dir) / STORE_ID
    if not path.is_file():
        return set()
    owner = path.read_text(encoding="utf-8").strip()
    return {c.name for c in client.list_collections() if (c.metadata or {}).get(OWNER_KEY) == owner}


def folder_id(memory_dir: Path) -> str:
    """The memory folder's own id (made once, kept in `store-id`): what its server collections are
    claimed with, so that moving the folder keeps them and a new folder does not take them over."""
    path = Path(memory_dir) / STORE_ID
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, f"{Path(memory_dir).resolve()} {uuid.uuid4()}")
    return path.read_text(encoding="utf-8").strip()
