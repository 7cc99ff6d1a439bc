"""Long-term memory: `remember`/`query` over a VectorStore plus BM25, fused by reciprocal rank.

Why hybrid: a plain vector query misses exact names, dates and rare words that BM25 catches, and
BM25 misses paraphrase; fusing the two rankings by rank (not by score, whose scales differ) beats
either alone. Why a mirror of the metadata in process: filters (time range, source, tags, kind)
run on it in microseconds, where a Chroma `where` filter costs tens of milliseconds at 100k rows, and
the BM25 index needs every text anyway (docs/decisions/0007). The vector store stays the durable
record; the mirror is rebuilt from it at open. New rows reach the store in batches, through a synced
journal (stores/buffered.py): one Chroma upsert costs as much as embedding the text, however small.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from mettaclaw.memory.core.layers import Announcer
from mettaclaw.memory.core.ranking import fuse
from mettaclaw.memory.core.settings import DEFAULT_SETTINGS, RecallSettings
from mettaclaw.memory.core.tags import WHO_TAG, row_tags, tag_keys
from mettaclaw.memory.core.text import terms
from mettaclaw.memory.core.times import time_key
from mettaclaw.memory.errors import EmbedderMismatch
from mettaclaw.memory.stores.buffered import BufferedVectors, VectorJournal
from mettaclaw.memory.stores.chroma import folder_id
from mettaclaw.memory.stores.embedders import Embedder, signature
from mettaclaw.memory.stores.keyed_vectors import FileKeyedVectors, RowVectors
from mettaclaw.memory.stores.lexical import BM25Index
from mettaclaw.memory.stores.vectors import StoredItem, VectorStore, cosine_scores
from mettaclaw.progress import progress_bar

from . import snapshot as snapshots
from .filters import FilterIndex, where_filter
from .rows import IndexRow, RememberResult, lexical_text, prepare_row, to_row, vector_text
from .sentence_vectors import SentenceVectors, sentence_parts

__all__ = ["EmbedderMismatch", "IndexRow", "LongTermMemory", "RememberResult", "open_longterm", "MODES"]

log = logging.getLogger(__name__)

MODES = ("hybrid", "vector", "bm25")
RESTORE_BATCH = 1000  # rows a damaged vector index is written again with at once (restore_vectors)
SCORED_AT_ONCE = 16_384  # rows whose vectors an exact search reads and scores together (_scored)
EXACT_UP_TO = 5000  # rows a filtered vector search scores one by one instead of asking the store
CAUGHT_AMONG_COPIES = 16  # rows of one text in the store's answer that say its search was caught (_searched)


@functools.lru_cache(maxsize=4)  # who has spoken changes rarely; queries ask each time
def _name_terms(names: frozenset[str]) -> frozenset[str]:
    """The BM25 terms of these people's names (lexical.py: a name alone makes no hit)."""
    return frozenset(t for name in names for t in terms(name))


def _hash_of(item: StoredItem) -> str:
    """The row's dedup key (rows.dedup_key), as `_by_hash` is keyed."""
    return str(item.metadata.get("hash", ""))


class LongTermMemory(Announcer):
    """Durable embedding memory; also a `layers.MemoryLayer` named "longterm"."""

    name = "longterm"

    def __init__(self, embedder: Embedder, store: VectorStore, *, default_mode: str = "hybrid",
                 max_items: int = 20, settings: RecallSettings = DEFAULT_SETTINGS,
                 snapshot: Path | None = None, journal: Path | None = None,
                 vectors: Path | None = None) -> None:
        """`journal`: where rows wait for the store (stores/buffered.py), None writes through to the store;
        `vectors`: the folder where the index keeps its own copies of the rows' vectors and their
        sentences' (keyed_vectors.py); None keeps the most recent sentence vectors in memory and asks
        the store for the rows' vectors."""
        super().__init__()
        if default_mode not in MODES:
            raise ValueError(f"unknown recall mode {default_mode!r}; use one of {', '.join(MODES)}")
        recorded = getattr(store, "embedder_signature", None)
        if recorded is not None and recorded != signature(embedder):
            raise EmbedderMismatch(f"store was opened for embedder {recorded!r}, not {signature(embedder)!r}")
        if journal is not None:  # rows a crash left in the journal go to the store here, before it is counted
            store = BufferedVectors(store, VectorJournal(journal), background=True)
        self.embedder, self.vector_store = embedder, store
        self.notices: list[str] = []  # what the user must be told at start-up (entry.open_memory prints them)
        self.default_mode, self.max_items = default_mode, max_items
        self.settings = settings
        self._items: dict[str, StoredItem] = {}
        self._by_hash: dict[str, str] = {}
        self._filters = FilterIndex()
        self._senders: frozenset[str] | None = None  # `senders`, until a row comes or goes
        self._bm25 = BM25Index(tokens_of=self._tokens_of)
        sig = signature(embedder)
        self._sentences = SentenceVectors(embedder.embed, None if vectors is None else
                                          FileKeyedVectors(vectors / "sentences", sig, embedder.dim, "float16"))
        self._row_vectors = RowVectors(store, None if vectors is None else
                                       FileKeyedVectors(vectors / "rows", sig, embedder.dim, "float32"))
        self.snapshot = snapshot  # where the in-process state is kept across restarts (snapshot.py)
        restored = snapshots.load(snapshot, signature(embedder), store.count(), self._tokens_of) if snapshot else None
        if restored is not None:
            self._items, self._bm25, self._filters = restored
            self._by_hash = {_hash_of(item): item.id for item in self._items.values()}
        else:
            texts = []
            for item in store.iter_all(batch=5000):
                self._mirror(item, index_words=False)
                texts.append((item.id, lexical_text(item.document, item.metadata)))
            self._bm25.load(texts)
        self._snapshot_on_disk = restored is not None

    def _tokens_of(self, ids: list[str]) -> dict[str, list[str]]:
        """The BM25 terms of these rows; called from the index's rebuild thread, so a row removed
        meanwhile is skipped (the rebuild tombstones it anyway)."""
        rows = {i: self._items.get(i) for i in ids}
        return {i: terms(lexical_text(row.document, row.metadata)) for i, row in rows.items() if row is not None}

    def _changing(self) -> None:
        """Before the first write after open: the snapshot on disk no longer matches, so it goes."""
        if self._snapshot_on_disk and self.snapshot is not None:
            snapshots.discard(self.snapshot)
            self._snapshot_on_disk = False

    # --- bookkeeping
    def _mirror(self, item: StoredItem, index_words: bool = True) -> None:
        self._items[item.id] = item
        self._by_hash[_hash_of(item)] = item.id
        self._filters.add(item.id, item.metadata)
        self._senders = None
        if index_words:
            self._bm25.add(item.id, lexical_text(item.document, item.metadata))

    def _unmirror(self, memory_id: str) -> StoredItem | None:
        self._senders = None
        self._sentences.forget(memory_id)
        self._row_vectors.forget(memory_id)
        item = self._items.pop(memory_id, None)
        if item is not None:
            if self._by_hash.get(_hash_of(item)) == memory_id:
                del self._by_hash[_hash_of(item)]
            self._filters.remove(memory_id, item.metadata)
            self._bm25.remove(memory_id)
        return item

    # --- writing
    def _write(self, prepared: list[tuple[str, dict[str, Any]]], given: Any = None,
               replace: bool = False) -> list[RememberResult]:
        import uuid

        results: list[RememberResult] = []
        ids, docs, metas, rows = [], [], [], []
        batch_ids: dict[str, int] = {}
        for n, (text, meta) in enumerate(prepared):
            existing = self._by_hash.get(meta["hash"])
            if replace and meta["hash"].startswith("id:"):
                existing = None  # written anew under its own id (below), not refreshed
            if meta["hash"] in batch_ids:  # a later copy in the same batch refreshes the first
                pos = batch_ids[meta["hash"]]
                if existing is None:
                    metas[pos] = meta
                # else the first copy refreshed the held row already; refreshing it again put its id twice
                # in one upsert, which Chroma refuses (DuplicateIDError): a prior's section said once in a
                # batch of 64 and twice in the next stopped the agent's start
                results.append(RememberResult(ids[pos], False))
                continue
            if existing is not None:  # refresh: new time, tags merged, everything else kept
                old = self._items[existing].metadata
                merged = tuple(dict.fromkeys(t for tags in (old.get("tags", ""), meta["tags"])
                                             for t in str(tags).split("|") if t))
                meta = {**old, "time": meta["time"], "tags": "|" + "|".join(merged) + "|" if merged else ""}
                meta.pop("ts", None)
                meta.update({"ts": ts} if (ts := time_key(meta["time"])[1]) is not None else {})
                meta.update(dict.fromkeys(tag_keys(merged), True))
            given_id = meta["hash"][3:] if meta["hash"].startswith("id:") else None
            row_id = existing or given_id or str(uuid.uuid4())
            batch_ids[meta["hash"]] = len(ids)
            ids.append(row_id)
            docs.append(text)
            metas.append(meta)
            rows.append(n)
            results.append(RememberResult(row_id, existing is None))
        if ids:
            self._changing()
            known = self.senders().union(t[len(WHO_TAG):] for m in metas for t in row_tags(m) if t.startswith(WHO_TAG))
            parts = {i: (d, p) for i, d, m in zip(ids, docs, metas, strict=True) if (p := sentence_parts(d, m, known))}
            if given is None:  # the rows and their sentences in one embedding call
                texts = [vector_text(d, m) for d, m in zip(docs, metas, strict=True)]
                rows_out = self.embedder.embed(texts + [s for _, p in parts.values() for s in p])
                vectors = rows_out[: len(texts)]
            else:
                vectors, rows_out, parts = np.asarray(given, dtype=np.float32)[rows], None, {}
            self.vector_store.add(ids, vectors, docs, metas)
            for row_id, doc, meta, vector in zip(ids, docs, metas, vectors, strict=True):
                self._unmirror(row_id)
                self._row_vectors.put(row_id, doc, vector)
                item = StoredItem(row_id, doc, meta)
                self._mirror(item)
                self.announce_capture(row_id, to_row(item))
            if rows_out is not None:
                self._sentences.keep(parts, rows_out[len(ids):])
            if isinstance(self.vector_store, BufferedVectors):
                self.vector_store.maybe_flush()
        return results

    def restore_vectors(self, store: VectorStore, progress: bool = False) -> tuple[int, int]:
        """Write every row's vector to `store` again, after its vector index was found damaged and
        set aside (chroma.py): the rows' texts and metadata survived in the store, their vectors in
        the index's own copies, and a row the copies lack is embedded again as it was when written.
        Returns (rows written, rows embedded again)."""
        ids, embedded = list(self._items), 0
        with progress_bar(progress) as bar:
            task = bar.add_task("restoring the vector index", total=len(ids))
            for start in range(0, len(ids), RESTORE_BATCH):
                batch = [self._items[i] for i in ids[start:start + RESTORE_BATCH]]
                vectors = self._row_vectors.kept({item.id: item.document for item in batch})
                missing = [item for item in batch if item.id not in vectors]
                if missing:
                    made = self.embedder.embed([vector_text(item.document, item.metadata) for item in missing])
                    for item, vector in zip(missing, made, strict=True):
                        vectors[item.id] = vector
                        self._row_vectors.put(item.id, item.document, vector)
                    embedded += len(missing)
                store.add([item.id for item in batch], np.stack([vectors[item.id] for item in batch]),
                          [item.document for item in batch], [item.metadata for item in batch])
                bar.update(task, completed=start + len(batch))
        return len(ids), embedded

    # --- sentence vectors
    def sentence_vectors(self, ids: list[str]) -> dict[str, Any]:
        """The sentence vectors of these rows (sentence_vectors.py): computed when a row is written,
        embedded again for a row whose kept copy is missing or stale."""
        return self._sentences.of({i: (self._items[i].document, self._items[i].metadata) for i in ids if i in self._items},
                                  self.senders())

    def senders(self) -> frozenset[str]:
        """The name of everyone who spoke (the rows' `who:` tags): the names a "who: " label of a row's
        text is read as (text.label), lower-case IRC nicks too, and that make no BM25 hit alone. Kept
        until a row comes or goes: a query asks it several times, and it reads every tag."""
        if self._senders is None:
            self._senders = frozenset(self._filters.tag_values(WHO_TAG))
        return self._senders

    def _scored(self, vector: Any, ids: Iterable[str]) -> tuple[list[str], np.ndarray]:
        """The rows among `ids` that have a vector, and each one's cosine with `vector`; read and
        scored SCORED_AT_ONCE rows at a time, so an exact search of 100k rows never holds all their
        vectors (150 MB with MiniLM) at once."""
        items = self._items
        present = [i for i in ids if i in items]
        found: list[str] = []
        scores = []
        for start in range(0, len(present), SCORED_AT_ONCE):
            got, rows = self._row_vectors.matrix({i: items[i].document for i in present[start:start + SCORED_AT_ONCE]})
            if got:
                found += got
                scores.append(cosine_scores(vector, rows))
        return found, np.concatenate(scores) if scores else np.zeros(0, dtype=np.float32)

    def vectors_of(self, texts: dict[str, str]) -> dict[str, np.ndarray]:
        """The vectors of the rows that hold exactly these texts (id -> text), as the index computed
        them when it wrote the rows: a reader that would embed the same text again (the dream
        clustering the episodes the turns indexed) takes them instead. From the index's own copies,
        the store asked only for rows they lack (a row written before copies were kept)."""
        held = {i: t for i, t in texts.items() if (item := self._items.get(i)) is not None and item.document == t}
        return self._row_vectors.of(held)

    def remember(self, text: str, *, time: str | None = None, source: str = "agent", tags: Any = (),
                 kind: str = "memory", atom: str | None = None, extra: dict | None = None) -> RememberResult:
        """Store one memory; an exact duplicate (same text, kind, atom) refreshes its time and tags."""
        return self._write([prepare_row(text, time, source, tags, kind, atom, extra)])[0]

    def remember_many(self, items: list[dict], vectors: Any = None, replace: bool = False) -> list[RememberResult]:
        """Like `remember` for many dicts at once (keys as its arguments, plus `id` for a row that is
        identified by its own id, such as an episode): one batched embedding call.

        `vectors` (one row per item, from this same embedder) skips embedding: for imports and migrations.
        `replace`: a row with its own `id` that is held already is written anew, metadata and all, in
        one upsert (a refresh keeps the old metadata): an episode whose context changed is rewritten
        without first being deleted, so a crash between the two cannot lose it.
        """
        if vectors is not None and (len(vectors) != len(items) or (items and len(vectors[0]) != self.embedder.dim)):
            raise ValueError(f"vectors must be {len(items)} rows of {self.embedder.dim} values")
        prepared = [prepare_row(it.get("text", ""), it.get("time"), it.get("source", "agent"), it.get("tags", ()),
                                  it.get("kind", "memory"), it.get("atom"), it.get("extra"), it.get("id"))
                    for it in items]
        return self._write(prepared, vectors, replace)

    def forget(self, memory_id: str) -> bool:
        return bool(self.forget_many([memory_id]))

    def forget_many(self, memory_ids: Iterable[str]) -> list[str]:
        """Forget these rows with one store delete (a Chroma delete costs the same however few rows it
        names, and a dream retires hundreds of mirrored records); the ids that were held."""
        gone = [i for i in dict.fromkeys(memory_ids) if i in self._items]
        if not gone:
            return []
        self._changing()
        items = [self._unmirror(i) for i in gone]
        self.vector_store.delete(gone)
        for memory_id, item in zip(gone, items, strict=True):
            self.announce_delete(memory_id, to_row(item))
        return gone

    # --- reading
    def query(self, text: str, *, limit: int | None = None, mode: str | None = None, since: str | None = None,
              until: str | None = None, source: str | None = None, tags: list[str] | None = None,
              kind: str | tuple[str, ...] | None = None, scopes: frozenset[str] | None = None) -> list[IndexRow]:
        """The best `limit` memories for `text` in one recall mode, optionally filtered."""
        mode = mode or self.default_mode
        if mode not in MODES:
            raise ValueError(f"unknown recall mode {mode!r}; use one of {', '.join(MODES)}")
        if not isinstance(text, str) or not text.strip():
            raise ValueError("cannot query with an empty text")
        limit = self.max_items if limit is None else int(limit)
        allowed = self._filters.select(since=since, until=until, source=source, tags=tags, kind=kind, scopes=scopes)
        if limit <= 0 or (allowed is not None and not allowed):
            return []
        where = where_filter(since=since, until=until, source=source, tags=tags, kind=kind)
        hits = self._ranked(text, limit, mode, allowed, where)
        return [to_row(self._items[i], score, parts) for i, score, parts in hits if i in self._items]

    # --- ranking
    def _vector_hits(self, text: str, depth: int, allowed: set[str] | None,
                     where: dict[str, Any] | None, vector: Any = None) -> list[tuple[str, float]]:
        """Nearest memories (to `vector`, else to the text's own); filtered by over-fetching and checking
        the mirror, the store's `where` as fallback."""
        vector = self.embedder.embed([text])[0] if vector is None else vector
        if allowed is None:
            return self._searched(vector, depth, None, None)
        wanted = min(depth, len(allowed))
        if len(allowed) * 4 >= len(self._items):  # a broad filter: most of an over-fetch survives it
            hits = [(i, s) for i, s in self._searched(vector, depth * 4, None, allowed) if i in allowed]
            if len(hits) >= wanted:
                return hits[:depth]
        if len(allowed) <= EXACT_UP_TO:  # a narrow filter (a small scope, a tag): score every row it lets through
            return self._exact(vector, depth, allowed)
        return [(i, s) for i, s in self._searched(vector, depth, where, allowed) if i in allowed]

    def _searched(self, vector: Any, k: int, where: dict[str, Any] | None,
                  allowed: set[str] | None) -> list[tuple[str, float]]:
        """The store's `k` nearest rows, or an exact search over the `allowed` rows (None: all) when its
        answer is caught among copies of one vector.

        Why: an agent whose model says "ok" at every turn writes an "agent: ok" row a turn, one vector
        many times over. Chroma's HNSW graph keeps M = 16 neighbours a point, and each copy's nearest
        points are the other copies, so their lists hold only each other: a search that steps in
        cannot leave, and the row that answers is never reached (docs/decisions/0004)."""
        hits = [(item.id, score) for item, score in self.vector_store.query(vector, k, where=where, bare=True)]
        texts = (vector_text(item.document, item.metadata) for i, _ in hits if (item := self._items.get(i)) is not None)
        copies = max(Counter(texts).values(), default=0)
        return self._exact(vector, k, allowed) if copies >= CAUGHT_AMONG_COPIES else hits

    def _exact(self, vector: Any, k: int, allowed: Iterable[str] | None) -> list[tuple[str, float]]:
        """The `k` nearest of the `allowed` rows (None: all), every row scored (copies of one text
        tie, and keep their order)."""
        ids, scores = self._scored(vector, self._items if allowed is None else allowed)
        return [(ids[pos], float(scores[pos])) for pos in np.argsort(-scores, kind="stable")[:k]]

    def _ranked(self, text: str, limit: int, mode: str, allowed: set[str] | None,
                where: dict[str, Any] | None) -> list[tuple[str, float, dict[str, Any]]]:
        lists = self.rankings(text, max(self.settings.depth, 3 * limit), mode, allowed, where)
        if mode != "hybrid":
            return [(i, s, {f"{mode}_score": s}) for i, s in lists[mode][:limit]]
        fused, ranks = fuse({name: [i for i, _ in hits] for name, hits in lists.items()},
                            {"vector": self.settings.vector, "bm25": self.settings.bm25}, self.settings.rrf_k)
        raw = {name: dict(hits) for name, hits in lists.items()}
        best = sorted(fused, key=lambda i: -fused[i])[:limit]
        return [(i, fused[i], {**{f"{n}_rank": r for n, r in ranks[i].items()},
                               **{f"{n}_score": raw[n][i] for n in ranks[i]}}) for i in best]

    def rankings(self, text: str, depth: int, mode: str = "hybrid", allowed: set[str] | None = None,
                 where: dict[str, Any] | None = None, vector: Any = None) -> dict[str, list[tuple[str, float]]]:
        """The `depth` best (id, score) by BM25 and by vector similarity (to `vector` when given: the
        query's vector a recall already has), as the mode asks: the lists the memory index
        contributes to a fusion."""
        lists: dict[str, list[tuple[str, float]]] = {}
        if mode in ("hybrid", "vector"):
            lists["vector"] = self._vector_hits(text, depth, allowed, where, vector)
        if mode in ("hybrid", "bm25"):
            names = _name_terms(self.senders())
            lists["bm25"] = self._bm25.search(text, depth, allowed, names)
        return lists

    def lexical_scores(self, text: str, documents: list[str]) -> list[float]:
        """Each of `documents`' BM25 score for `text` as if it were one more row of the index (the
        rankings' own statistics): how a passage of a long row would rank among the rows."""
        return self._bm25.score_texts(text, documents)

    # --- the layer protocol (core/layers.MemoryLayer)
    def get(self, record_id: str) -> IndexRow | None:
        item = self._items.get(record_id)
        return None if item is None else to_row(item)

    def row(self, record_id: str) -> StoredItem | None:
        """The stored row itself (not a copy): for readers that rank hundreds of rows a query and
        must not change them."""
        return self._items.get(record_id)

    def settle(self) -> None:
        """Wait for a BM25 rebuild running in the background and put it in place: for a benchmark
        that times the steady state, not the seconds after a large import."""
        self._bm25.wait()

    def stats(self) -> dict[str, Any]:
        return {"count": len(self._items), "embedder": signature(self.embedder), "mode": self.default_mode,
                "bm25_rebuilds": self._bm25.rebuilds}

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[IndexRow]:
        return iter([to_row(item) for item in list(self._items.values())])

    def ids_by(self, **filters: Any) -> set[str]:
        """Ids passing the filters: every row's when none is given (`select` says None instead)."""
        allowed = self._filters.select(**filters)
        return set(self._items) if allowed is None else set(allowed)

    def select(self, **filters: Any) -> set[str] | None:
        """Ids passing the filters (`FilterIndex.select`), or None when none was given: what
        `rankings(allowed=...)` takes."""
        return self._filters.select(**filters)

    def close(self) -> None:
        """Write the snapshot (when there is a place for it and something changed), close the store."""
        try:
            if self.snapshot is not None and not self._snapshot_on_disk:
                snapshots.save(self.snapshot, signature(self.embedder),
                               snapshots.Restored(self._items, self._bm25, self._filters))
                self._snapshot_on_disk = True
        finally:
            self._sentences.close()
            self._row_vectors.close()
            close = getattr(self.vector_store, "close", None)
            if close is not None:
                close()


def open_longterm(config: Any, embedder: Embedder, settings: RecallSettings = DEFAULT_SETTINGS,
                  progress: bool = False) -> LongTermMemory:
    """The memory index a config describes: the store by `chromaMode`, ranking by `recallMode`; a
    vector index found damaged at open is built again here (a bar with `progress`)."""
    from mettaclaw.memory.stores.chroma import ChromaVectorStore
    from mettaclaw.memory.stores.vectors import InMemoryVectorStore

    sig = signature(embedder)
    snapshot, vectors, journal = None, None, config.memory_path("index-journal.jsonl")
    if config.chromaMode == "embedded":  # one process owns the folder: its snapshot can be trusted
        store: Any = ChromaVectorStore.embedded(config.memory_path("chroma"), embedder_signature=sig)
        snapshot, vectors = config.memory_path("index-snapshot"), config.memory_path("index-vectors")
    elif config.chromaMode == "server":
        store = ChromaVectorStore.server(config.chromaHost, config.chromaPort, embedder_signature=sig,
                                         owner=folder_id(config.memory_path()))
    else:
        store, journal = InMemoryVectorStore(), None
    try:
        index = LongTermMemory(embedder, store, default_mode=config.recallMode, max_items=config.maxRecallItems,
                               settings=settings, snapshot=snapshot, journal=journal, vectors=vectors)
    except BaseException:
        getattr(store, "close", lambda: None)()
        raise
    if getattr(store, "vectors_lost", None):
        try:
            written, embedded = index.restore_vectors(store, progress)
        except BaseException:
            index.close()
            raise
        index.notices.append(f"{store.vectors_lost}: {written} rows' vectors written again ({embedded} embedded anew)")
        log.warning("%s", index.notices[-1])
        store.rebuilt()
    if vectors is not None and not len(index) and (missing := lost_store(config.memory_path("chroma"), vectors)):
        log.error("%s", missing)
        index.notices.append(missing)
    return index


def lost_store(store: Path, vectors: Path) -> str | None:
    """What to tell the user when the embedded store is empty in a folder whose index had rows (their
    vector copies are still listed): it was deleted or moved aside, and a new, empty one was made. Said
    at every start until the store holds rows again: without a word, the agent had forgotten every
    memory stored with `remember`."""
    listing = vectors / "rows" / "rows.jsonl"
    if not listing.is_file():
        return None
    live: set[str] = set()  # rows written and not forgotten since: all removed (the knowledge priors
    with open(listing, "rb") as fh:  # taken out, every memory forgotten) leave an empty store rightly
        fh.readline()  # the header
        for line in fh:
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:  # a torn last line
                continue
            if isinstance(row, list) and len(row) == 4 and isinstance(row[0], str):
                live.add(row[0])
            elif isinstance(row, list) and len(row) == 1:
                live.discard(str(row[0]))
    if not live:
        return None
    return (f"the vector store {store} is empty, though this folder's index held rows: it was deleted or moved "
            "aside, and a new one was made. Episodes are indexed again from the trace, but memories stored with "
            "remember are gone unless the folder is restored from a copy or an export")
