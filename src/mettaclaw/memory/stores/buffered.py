"""Write-behind in front of a vector index: one write should not pay a Chroma upsert.

Why: an embedded Chroma upsert costs as much as embedding the text however small (docs/decisions/0002),
and the agent writes several rows a turn (its episodes, `remember`, the dream's records). So new rows wait durably in a `PendingLog`, are held in a small in-process matrix that
every query searches exactly, and go to the index in batches. A crash before a flush loses nothing:
the log is replayed into the index the next time the store is opened.

Two logs: the semantic tier's record store, which keeps each record's vector anyway and queues its id
in the write's own transaction (`semantic.memory.QueuedRecords`), and `VectorJournal`, a synced file
of the rows themselves for the long-term index, whose only durable copy is the vector store.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mettaclaw.textutil import append_synced, atomic_write

from .vectors import StoredItem, VectorStore, Where, matches

log = logging.getLogger(__name__)

FLUSH_EVERY = 64
BACKLOG = 8  # batches that may wait for a background flusher before writers flush themselves

Row = tuple[str, np.ndarray, str, dict[str, Any]]  # id, vector, document, metadata


class PendingLog(Protocol):
    """Where rows wait, durably, until the index has them."""

    def queue(self, rows: list[Row]) -> None: ...

    def settled(self, ids: list[str]) -> None:
        """These rows are in the index now, or deleted: no longer to be replayed."""
        ...

    def replay(self) -> list[Row]:
        """The rows still waiting, oldest first (after a crash: what the index may lack)."""
        ...


class VectorJournal:
    """A PendingLog in one file of synced JSON lines, each `{"put": [rows]}`.

    When rows settle, the file is rewritten (atomically) with only the rows still waiting, and emptied
    when none are: it holds at most a few flushes' worth, and a forgotten row's text does not stay in
    it. A line cut by a crash mid-append was never acknowledged and is skipped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._waiting: dict[str, Row] = {}

    @staticmethod
    def _line(rows: list[Row]) -> str:
        put = [[row_id, base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode("ascii"), doc, meta]
               for row_id, vec, doc, meta in rows]
        return json.dumps({"put": put}, ensure_ascii=True) + "\n"

    def queue(self, rows: list[Row]) -> None:
        if rows:
            append_synced(self.path, self._line(rows))
            self._waiting.update((row[0], row) for row in rows)

    def settled(self, ids: list[str]) -> None:
        gone = [i for i in ids if self._waiting.pop(i, None) is not None]
        if not gone:
            return
        if self._waiting:
            atomic_write(self.path, self._line(list(self._waiting.values())))
        else:
            with open(self.path, "r+b") as fh:
                fh.truncate(0)

    def replay(self) -> list[Row]:
        self._waiting = {}
        if not self.path.exists():
            return []
        lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()  # a damaged line is skipped, not the file
        for n, line in enumerate(lines, start=1):
            try:
                rows = [(str(row_id), np.frombuffer(base64.b64decode(vec), dtype="<f4").copy(), str(doc), dict(meta))
                        for row_id, vec, doc, meta in json.loads(line)["put"]]
            except (ValueError, TypeError, KeyError, AttributeError):
                if n < len(lines):  # not a torn last line: say so, keep the rest
                    log.warning("skipped unreadable line %d of %s: %r", n, self.path, line[:200])
                continue
            self._waiting.update((row[0], row) for row in rows)
        return list(self._waiting.values())


class BufferedVectors:
    """A VectorStore: the index plus the rows not yet flushed to it, searched together.

    `background`: flush from a thread of its own. Chroma's upsert releases the GIL, so a turn then
    never waits for the index; the semantic tier flushes in the caller's thread instead, because its
    log is the record store, written inside the caller's transactions."""

    def __init__(self, index: VectorStore, pending_log: PendingLog, flush_every: int = FLUSH_EVERY,
                 background: bool = False) -> None:
        self.index, self.log, self.flush_every, self.background = index, pending_log, flush_every, background
        self._pending: dict[str, tuple[np.ndarray, str, dict[str, Any]]] = {}
        self._lock = threading.RLock()  # the dream phase may write while the agent's turn reads
        self._flushing = threading.Lock()  # one flush at a time; a delete waits for it
        self._wake = threading.Event()
        self._stopping = False
        self._flusher: threading.Thread | None = None
        replayed = pending_log.replay()
        if replayed:  # a previous run ended before its last flush
            for row_id, vec, doc, meta in replayed:
                self._pending[row_id] = (vec, doc, meta)
            self._flush_or_log("%d rows waiting from an earlier run could not go to the vector index yet")

    def add(self, ids: list[str], vectors: np.ndarray, documents: list[str], metadatas: list[dict[str, Any]]) -> None:
        """Log (durably) and hold; `maybe_flush` sends them later. A batch of `flush_every` rows or
        more (an import, a fill) is already as cheap per row as the index gets: it goes straight in."""
        if len(ids) >= self.flush_every:
            with self._flushing:
                self.index.add(list(ids), vectors, documents, metadatas)
                with self._lock:  # older versions still waiting are superseded
                    for row_id in ids:
                        self._pending.pop(row_id, None)
                    self.log.settled(list(ids))
            return
        rows = [(row_id, np.asarray(vectors[i], dtype=np.float32), documents[i], dict(metadatas[i]))
                for i, row_id in enumerate(ids)]
        with self._lock:
            self.log.queue(rows)
            for row_id, vec, doc, meta in rows:
                self._pending[row_id] = (vec, doc, meta)

    def maybe_flush(self) -> None:
        """Flush once `flush_every` rows wait. A failing index is logged, not raised: the rows are
        stored (logged and searchable) and go to the index at the next flush."""
        waiting = len(self._pending)
        if waiting < self.flush_every:
            return
        if self.background and waiting < BACKLOG * self.flush_every:  # beyond it, the writer waits too
            if self._flusher is None:
                self._flusher = threading.Thread(target=self._flush_when_woken, name="vector-flush", daemon=True)
                self._flusher.start()
            self._wake.set()
            return
        self._flush_or_log()

    def _flush_when_woken(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            self._flush_or_log()

    def _flush_or_log(self, message: str = "the vector index refused %d waiting rows; they stay queued") -> None:
        """`flush`, where a failure must not fail the caller: the rows stay logged and searchable,
        and the next flush tries again. `message` gets the count of rows waiting."""
        try:
            self.flush()
        except Exception:  # noqa: BLE001 - logged; nothing is lost
            log.exception(message, len(self._pending))

    def flush(self) -> None:
        """Send every waiting row to the index. Reads and writes go on meanwhile: a row written again
        during the upsert stays waiting with its new content."""
        with self._flushing:
            with self._lock:
                batch = dict(self._pending)
            if not batch:
                return
            ids = list(batch)
            self.index.add(ids, np.stack([batch[i][0] for i in ids]), [batch[i][1] for i in ids],
                           [batch[i][2] for i in ids])
            with self._lock:
                done = [i for i in ids if self._pending.get(i) is batch[i]]
                for i in done:
                    del self._pending[i]
                self.log.settled(done)

    def _held(self) -> list[tuple[str, tuple[np.ndarray, str, dict[str, Any]]]]:
        with self._lock:
            return list(self._pending.items())

    def get(self, ids: list[str]) -> list[StoredItem]:
        held = dict(self._held())
        return ([StoredItem(i, held[i][1], held[i][2]) for i in ids if i in held]
                + self.index.get([i for i in ids if i not in held]))

    def delete(self, ids: list[str]) -> None:
        with self._flushing, self._lock:  # not while a flush is sending these rows to the index
            for i in ids:
                self._pending.pop(i, None)
            self.log.settled(list(ids))
            self.index.delete(list(ids))

    def query(self, vector: np.ndarray, k: int, where: Where | None = None,
              bare: bool = False) -> list[tuple[StoredItem, float]]:
        held = self._held()
        pending = {i for i, _ in held}
        found = [(item, s) for item, s in self.index.query(vector, k, where, bare=bare) if item.id not in pending]
        held = [(row_id, row) for row_id, row in held if matches(row[2], where)]
        if held:
            sims = np.stack([row[0] for _, row in held]) @ np.asarray(vector, dtype=np.float32)
            found += [(StoredItem(row_id, doc, meta), float(sim))
                      for (row_id, (_, doc, meta)), sim in zip(held, sims, strict=True)]
        found.sort(key=lambda pair: -pair[1])
        return found[:k]

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        held = dict(self._held())
        return {**self.index.vectors([i for i in ids if i not in held]), **{i: held[i][0] for i in ids if i in held}}

    def find(self, where: Where, limit: int | None = None) -> list[StoredItem]:
        held = [StoredItem(i, d, m) for i, (_, d, m) in self._held() if matches(m, where)]
        out = held + [item for item in self.index.find(where) if item.id not in {h.id for h in held}]
        return out if limit is None else out[:limit]

    def count(self) -> int:
        return self.index.count() + sum(1 for i, _ in self._held() if not self.index.get([i]))

    def iter_all(self, batch: int = 1000) -> Iterator[StoredItem]:
        held = self._held()
        pending = {i for i, _ in held}
        yield from (StoredItem(i, d, m) for i, (_, d, m) in held)
        yield from (item for item in self.index.iter_all(batch) if item.id not in pending)

    def close(self) -> None:
        """Stop the flusher, flush, then close the index (whatever the flush did: a refused flush
        stays in the log)."""
        if self._flusher is not None:
            self._stopping = True
            self._wake.set()
            self._flusher.join()
            self._flusher = None
        try:
            self.flush()
        finally:
            getattr(self.index, "close", lambda: None)()
