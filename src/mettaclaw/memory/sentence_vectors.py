"""The memory index's sentence vectors: each row's sentences embedded, for ranking a long row by its
best sentence (recall.py).

Why they are kept on disk: recall compares the sentences of up to 200 pooled candidates with every
query. Kept in memory only, they were gone after each restart (and past the cache's 20,000 rows),
and a query then embedded the sentences of every pooled row again: 1.5-3 s a query over 10,000 rows
of three sentences (measured), where the rest of the ranking takes about 30 ms. Computed in the same
embedding call as their row, they cost nothing extra at write.

Why a file of their own and not the vector store: sentences are a ranking aid, not memories; they
are only ever read by row id, never searched. Why the file can be trusted without syncing: each entry
carries a digest of its row's text, checked at every read, so an entry a crash or a rewrite left
behind never serves another text; a missing or stale entry is embedded again when a query needs it.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import orjson

from mettaclaw.textutil import atomic_write

from .text import labelled_sentences

log = logging.getLogger(__name__)

CAPACITY = 20_000  # rows whose sentence vectors the in-memory store keeps (about 40 MB of float16 with MiniLM)
FORMAT = 1
COMPACT_ABOVE_BYTES = 4 << 20  # dead vectors worth a rewrite at open (when also more than the live ones)


def sentence_parts(text: str, meta: dict[str, Any]) -> list[str] | None:
    """A row's sentences (labelled with who said them) when its best sentence is not simply the row."""
    found = labelled_sentences(text)
    return found if len(found) > 1 or found[0] != text or meta.get("breadcrumb") else None


def text_digest(text: str) -> str:
    """What an entry is checked against: the sentences belong to this text and no other."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


class SentenceVectorStore(Protocol):
    """Row id -> (digest of the row's text, its sentence vectors)."""

    def get(self, row_id: str, digest: str) -> np.ndarray | None:
        """The row's sentence vectors if they were made from the text with this digest."""

    def put(self, row_id: str, digest: str, vectors: np.ndarray) -> None: ...

    def forget(self, row_id: str) -> None: ...

    def close(self) -> None: ...


class InMemorySentenceVectors:
    """The most recently written or used `capacity` rows, least recent evicted first."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._rows: OrderedDict[str, tuple[str, np.ndarray]] = OrderedDict()

    def get(self, row_id: str, digest: str) -> np.ndarray | None:
        entry = self._rows.get(row_id)
        if entry is None or entry[0] != digest:
            return None
        self._rows.move_to_end(row_id)
        return entry[1]

    def put(self, row_id: str, digest: str, vectors: np.ndarray) -> None:
        self._rows[row_id] = (digest, np.asarray(vectors, dtype=np.float16))
        self._rows.move_to_end(row_id)
        while len(self._rows) > self.capacity:
            self._rows.popitem(last=False)

    def forget(self, row_id: str) -> None:
        self._rows.pop(row_id, None)

    def close(self) -> None:
        self._rows.clear()


class _Entry(NamedTuple):
    start: int  # first vector's position in the vectors file
    count: int
    digest: str


class FileSentenceVectors:
    """Every row's sentence vectors in `folder`: float16 rows appended to `vectors-<n>.f16`, and
    `rows.jsonl`, a header naming that file, then one line per entry (`[id, start, count, digest]`) or
    forgotten row (`[id]`). A forgotten or replaced entry's vectors are overwritten with zeros at once;
    the space is reclaimed at an open when more than half the file (and over 4 MB) is dead, by writing
    the live entries under the next file name and then swapping `rows.jsonl` in one rename."""

    def __init__(self, folder: Path, embedder: str, dim: int) -> None:
        self.folder, self.embedder, self.dim = Path(folder), embedder, int(dim)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._rows_path = self.folder / "rows.jsonl"
        self._entries: dict[str, _Entry] = {}
        name = self._read()
        if name is None:  # nothing usable: start empty, and drop vectors of another embedder
            for stale in self.folder.glob("vectors-*.f16"):
                stale.unlink()
            name = self._start("vectors-0.f16", {})
        self._vectors_path = self.folder / name
        self._vec = os.open(self._vectors_path, os.O_RDWR | os.O_CREAT, 0o600)
        self._stored = self._whole_rows()
        self._entries = {i: e for i, e in self._entries.items() if e.start + e.count <= self._stored}
        self._log = os.open(self._rows_path, os.O_WRONLY | os.O_APPEND)
        if self._rows_path.read_bytes()[-1:] != b"\n":  # a torn last line: the next starts on its own line
            os.write(self._log, b"\n")
        for leftover in self.folder.glob("vectors-*.f16"):
            if leftover.name != name:
                leftover.unlink()
        live = sum(e.count for e in self._entries.values())
        if (self._stored - live) * self.dim * 2 > COMPACT_ABOVE_BYTES and self._stored - live > live:
            self._compact()

    # --- the files
    def _header(self, name: str) -> bytes:
        return orjson.dumps({"format": FORMAT, "embedder": self.embedder, "dim": self.dim, "vectors": name})

    def _read(self) -> str | None:
        """Load the entries; the vectors file's name, or None when the folder holds nothing usable."""
        try:
            lines = self._rows_path.read_bytes().split(b"\n")
        except FileNotFoundError:
            return None
        try:
            header = orjson.loads(lines[0])
            usable = (header.get("format") == FORMAT and header.get("embedder") == self.embedder
                      and header.get("dim") == self.dim)
        except (orjson.JSONDecodeError, AttributeError):
            usable = False
        if not usable:
            log.warning("sentence vectors in %s were made for another embedder or format; they will be "
                        "embedded again as queries need them", self.folder)
            return None
        for line in lines[1:]:
            try:
                row = orjson.loads(line)
                if len(row) == 1:
                    self._entries.pop(str(row[0]), None)
                else:
                    self._entries[str(row[0])] = _Entry(int(row[1]), int(row[2]), str(row[3]))
            except (orjson.JSONDecodeError, TypeError, ValueError, IndexError, KeyError):
                continue  # a torn or damaged line: that entry is embedded again when needed
        return str(header["vectors"])

    def _start(self, name: str, entries: dict[str, _Entry]) -> str:
        """Write `rows.jsonl` anew (synced, swapped in by one rename) naming the vectors file `name`."""
        lines = [self._header(name)] + [orjson.dumps([i, e.start, e.count, e.digest]) for i, e in entries.items()]
        atomic_write(self._rows_path, b"\n".join(lines).decode("utf-8") + "\n")
        return name

    def _whole_rows(self) -> int:
        """Vectors in the file; a torn last vector (a crash mid-append) is cut off."""
        size = os.fstat(self._vec).st_size
        whole = size // (self.dim * 2)
        if whole * self.dim * 2 != size:
            os.ftruncate(self._vec, whole * self.dim * 2)
        return whole

    def _compact(self) -> None:
        number = int(self._vectors_path.stem.split("-")[1]) + 1
        fresh = self.folder / f"vectors-{number}.f16"
        entries, pos = {}, 0
        with open(fresh, "wb") as out:
            for row_id, entry in self._entries.items():
                out.write(self._vectors_of(entry).tobytes())
                entries[row_id] = _Entry(pos, entry.count, entry.digest)
                pos += entry.count
            out.flush()
            os.fsync(out.fileno())
        os.close(self._log)
        self._start(fresh.name, entries)
        os.close(self._vec)
        self._vectors_path.unlink()
        self._vectors_path, self._entries, self._stored = fresh, entries, pos
        self._vec = os.open(fresh, os.O_RDWR)
        self._log = os.open(self._rows_path, os.O_WRONLY | os.O_APPEND)
        log.info("sentence vectors compacted to %d rows in %s", pos, fresh)

    def _vectors_of(self, entry: _Entry) -> np.ndarray:
        data = os.pread(self._vec, entry.count * self.dim * 2, entry.start * self.dim * 2)
        return np.frombuffer(data, dtype=np.float16).reshape(entry.count, self.dim)

    def _erase(self, row_id: str) -> None:
        entry = self._entries.pop(row_id, None)
        if entry is not None:
            os.pwrite(self._vec, bytes(entry.count * self.dim * 2), entry.start * self.dim * 2)

    # --- the store
    def get(self, row_id: str, digest: str) -> np.ndarray | None:
        entry = self._entries.get(row_id)
        return self._vectors_of(entry) if entry is not None and entry.digest == digest else None

    def put(self, row_id: str, digest: str, vectors: np.ndarray) -> None:
        rows = np.ascontiguousarray(vectors, dtype=np.float16).reshape(-1, self.dim)
        self._erase(row_id)
        os.pwrite(self._vec, rows.tobytes(), self._stored * self.dim * 2)
        self._entries[row_id] = _Entry(self._stored, len(rows), digest)
        self._stored += len(rows)
        os.write(self._log, orjson.dumps([row_id, self._stored - len(rows), len(rows), digest]) + b"\n")

    def forget(self, row_id: str) -> None:
        if row_id in self._entries:
            self._erase(row_id)
            os.write(self._log, orjson.dumps([row_id]) + b"\n")

    def close(self) -> None:
        """Once only: a descriptor number closed twice may by then belong to another file."""
        for fd in (self._vec, self._log):
            if fd >= 0:
                os.close(fd)
        self._vec = self._log = -1


class SentenceVectors:
    """The rows' sentence vectors as recall asks for them: from the store, else embedded now."""

    def __init__(self, embed: Callable[[list[str]], Any], store: SentenceVectorStore | None = None) -> None:
        self.embed = embed
        self.store: SentenceVectorStore = store if store is not None else InMemorySentenceVectors()

    def keep(self, parts: dict[str, tuple[str, list[str]]], vectors: Any) -> None:
        """Store the vectors of `parts` (row id -> (its text, its sentences)), given one after another."""
        pos = 0
        for row_id, (text, found) in parts.items():
            self.store.put(row_id, text_digest(text), np.asarray(vectors[pos : pos + len(found)]))
            pos += len(found)

    def forget(self, row_id: str) -> None:
        self.store.forget(row_id)

    def of(self, rows: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        """The sentence vectors of those rows (id -> (text, metadata)) that have several sentences (or a
        breadcrumb); rows the store lacks are embedded now, in one call, and stored."""
        out: dict[str, Any] = {}
        missing: dict[str, tuple[str, list[str]]] = {}
        for row_id, (text, meta) in rows.items():
            found = self.store.get(row_id, text_digest(text))
            if found is not None:
                out[row_id] = found
            elif parts := sentence_parts(text, meta):
                missing[row_id] = (text, parts)
        if missing:
            vectors = np.asarray(self.embed([s for _, p in missing.values() for s in p]), dtype=np.float16)
            self.keep(missing, vectors)
            pos = 0
            for row_id, (_, parts) in missing.items():
                out[row_id] = vectors[pos : pos + len(parts)]
                pos += len(parts)
        return out

    def close(self) -> None:
        self.store.close()
