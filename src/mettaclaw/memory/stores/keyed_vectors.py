"""Vectors kept by row id, each entry checked against a digest of the row's text: the memory index's
own copies of what it needs by id (sentence_vectors.py; the rows' vectors, longterm.py), because
asking Chroma for stored vectors by id costs more than the rest of a query's ranking (docs/decisions/0003).

Why a file that is never synced can be trusted: each entry carries a digest of its row's text,
checked at every read, so an entry a crash or a rewrite left behind never serves another text; a
missing or stale entry is computed again (or read from the vector store) when it is needed.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import orjson

from mettaclaw.memory.core.gc import no_collection
from mettaclaw.textutil import atomic_write

log = logging.getLogger(__name__)

CAPACITY = 20_000  # rows the in-memory store keeps (about 40 MB of float16 sentence vectors with MiniLM)
FORMAT = 2  # 2: the header names the element type
COMPACT_ABOVE_BYTES = 4 << 20  # dead vectors worth a rewrite at open (when also more than the live ones)


def text_digest(text: str) -> str:
    """What an entry is checked against: its vectors were made from this text and no other."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


class KeyedVectors(Protocol):
    """Row id -> (digest of the row's text, a matrix of vectors)."""

    def get(self, row_id: str, digest: str) -> np.ndarray | None:
        """The row's vectors if they were made from the text with this digest."""

    def put(self, row_id: str, digest: str, vectors: np.ndarray) -> None: ...

    def many(self, wanted: dict[str, str]) -> tuple[list[str], np.ndarray]:
        """The rows among `wanted` (id -> digest) kept as one vector made from that text: their ids,
        and their vectors as one float32 matrix in the same order."""

    def forget(self, row_id: str) -> None: ...

    def ids(self) -> list[str]:
        """The rows that have vectors."""

    def close(self) -> None: ...


class InMemoryKeyedVectors:
    """The most recently written or used `capacity` rows, least recent evicted first."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._rows: OrderedDict[str, tuple[str, np.ndarray]] = OrderedDict()  # as given: no precision lost

    def get(self, row_id: str, digest: str) -> np.ndarray | None:
        entry = self._rows.get(row_id)
        if entry is None or entry[0] != digest:
            return None
        self._rows.move_to_end(row_id)
        return entry[1]

    def put(self, row_id: str, digest: str, vectors: np.ndarray) -> None:
        self._rows[row_id] = (digest, np.asarray(vectors))
        self._rows.move_to_end(row_id)
        while len(self._rows) > self.capacity:
            self._rows.popitem(last=False)

    def many(self, wanted: dict[str, str]) -> tuple[list[str], np.ndarray]:
        ids, rows = [], []
        for row_id, digest in wanted.items():
            if (found := self.get(row_id, digest)) is not None and len(found) == 1:
                ids.append(row_id)
                rows.append(found[0])
        return ids, _matrix(rows, 0)

    def forget(self, row_id: str) -> None:
        self._rows.pop(row_id, None)

    def ids(self) -> list[str]:
        return list(self._rows)

    def close(self) -> None:
        self._rows.clear()


class _Entry(NamedTuple):
    start: int  # first vector's position in the vectors file
    rows: int  # how many vectors it holds
    digest: str


class FileKeyedVectors:
    """Every row's vectors in `folder`: rows of `dtype` appended to `vectors-<n>.bin`, and
    `rows.jsonl`, a header naming that file, then one line per entry (`[id, start, count, digest]`) or
    forgotten row (`[id]`). A forgotten or replaced entry's vectors are overwritten with zeros at once;
    the space is reclaimed at an open when more than half the file (and over 4 MB) is dead, by writing
    the live entries under the next file name and then swapping `rows.jsonl` in one rename."""

    def __init__(self, folder: Path, embedder: str, dim: int, dtype: str = "float16") -> None:
        self.folder, self.embedder, self.dim = Path(folder), embedder, int(dim)
        self.dtype = np.dtype(dtype)
        self._width = self.dim * self.dtype.itemsize  # bytes a vector takes
        self.folder.mkdir(parents=True, exist_ok=True)
        self._rows_path = self.folder / "rows.jsonl"
        self._entries: dict[str, _Entry] = {}
        self._torn = False  # rows.jsonl ends in a torn line (a crash mid-append)
        with no_collection():  # many objects, no garbage: a collection would walk torch's objects too
            name = self._read()
        if name is None:  # nothing usable: start empty, and drop vectors of another embedder
            for stale in self.folder.glob("vectors-*.bin"):
                stale.unlink()
            name = self._start("vectors-0.bin", {})
        self._vectors_path = self.folder / name
        self._vec = os.open(self._vectors_path, os.O_RDWR | os.O_CREAT, 0o600)
        self._stored = self._whole_rows()
        self._entries = {i: e for i, e in self._entries.items() if e.start + e.rows <= self._stored}
        self._log = os.open(self._rows_path, os.O_WRONLY | os.O_APPEND)
        if self._torn:  # the next line starts on its own line
            os.write(self._log, b"\n")
        for leftover in self.folder.glob("vectors-*.bin"):
            if leftover.name != name:
                leftover.unlink()
        live = sum(e.rows for e in self._entries.values())
        if (self._stored - live) * self._width > COMPACT_ABOVE_BYTES and self._stored - live > live:
            self._compact()

    # --- the files
    def _header(self, name: str) -> bytes:
        return orjson.dumps({"format": FORMAT, "embedder": self.embedder, "dim": self.dim, "dtype": self.dtype.name,
                             "vectors": name})

    def _read(self) -> str | None:
        """Load the entries; the vectors file's name, or None when the folder holds nothing usable."""
        try:
            data = self._rows_path.read_bytes()
        except FileNotFoundError:
            return None
        self._torn, lines = not data.endswith(b"\n"), data.split(b"\n")
        header, why = self._header_of(lines[0])
        if why is not None:
            log.warning("the vectors in %s %s; they will be computed again as they are needed", self.folder, why)
            return None
        body = [line for line in lines[1:] if line]
        try:  # one parse for the whole file
            rows = orjson.loads(b"[" + b",".join(body) + b"]")
        except orjson.JSONDecodeError:  # a torn or damaged line: parse them one by one, skipping it
            rows = []
            for line in body:
                with contextlib.suppress(orjson.JSONDecodeError):
                    rows.append(orjson.loads(line))
        make, entries = _Entry._make, self._entries
        for row in rows:  # a line of the wrong shape is skipped: that entry is computed again when needed
            if type(row) is not list:
                continue
            if len(row) == 4 and type(row[0]) is str and type(row[1]) is int and type(row[2]) is int \
                    and type(row[3]) is str:
                entries[row[0]] = make(row[1:])
            elif len(row) == 1:
                entries.pop(str(row[0]), None)
        return str(header["vectors"])

    def _header_of(self, line: bytes) -> tuple[dict[str, Any], str | None]:
        """The header line, and why the vectors it names are not this store's (None: they are). A
        damaged header is told apart from another embedder's or format's: "made for another embedder
        or format" sent the user looking for a setting they had not changed."""
        try:
            header = orjson.loads(line)
        except orjson.JSONDecodeError:
            return {}, f"are listed in {self._rows_path.name}, whose header is damaged (not JSON)"
        if not isinstance(header, dict):
            return {}, f"are listed in {self._rows_path.name}, whose header is damaged (not a JSON object)"
        if type(header.get("format")) is int and header["format"] != FORMAT:  # an older header has other fields
            return header, f"are in format {header['format']}, not this version's {FORMAT}"
        kinds = {"format": int, "embedder": str, "dim": int, "dtype": str, "vectors": str}
        if wrong := [k for k, kind in kinds.items() if type(header.get(k)) is not kind]:
            return header, f"are listed in {self._rows_path.name}, whose header is damaged (no valid {', '.join(wrong)})"
        if re.fullmatch(r"vectors-\d+\.bin", header["vectors"]) is None:
            return header, (f"are listed in {self._rows_path.name}, whose header is damaged (it names "
                            f"{header['vectors'][:100]!r} as the vectors file)")
        made, ours = (header["embedder"], header["dim"], header["dtype"]), (self.embedder, self.dim, self.dtype.name)
        if made != ours:
            return header, "were made by {} ({} dimensions, {}), not by this memory's {} ({} dimensions, {})".format(
                *(str(v)[:100] for v in (*made, *ours)))
        return header, None

    def _start(self, name: str, entries: dict[str, _Entry]) -> str:
        """Write `rows.jsonl` anew (synced, swapped in by one rename) naming the vectors file `name`."""
        lines = [self._header(name)] + [orjson.dumps([i, e.start, e.rows, e.digest]) for i, e in entries.items()]
        atomic_write(self._rows_path, b"\n".join(lines).decode("utf-8") + "\n")
        self._torn = False
        return name

    def _whole_rows(self) -> int:
        """Vectors in the file; a torn last vector (a crash mid-append) is cut off."""
        size = os.fstat(self._vec).st_size
        whole = size // self._width
        if whole * self._width != size:
            os.ftruncate(self._vec, whole * self._width)
        return whole

    def _compact(self) -> None:
        number = int(self._vectors_path.stem.split("-")[1]) + 1
        fresh = self.folder / f"vectors-{number}.bin"
        entries, pos = {}, 0
        with open(fresh, "wb") as out:
            for row_id, entry in self._entries.items():
                out.write(self._vectors_of(entry).tobytes())
                entries[row_id] = _Entry(pos, entry.rows, entry.digest)
                pos += entry.rows
            out.flush()
            os.fsync(out.fileno())
        os.close(self._log)
        self._start(fresh.name, entries)
        os.close(self._vec)
        self._vectors_path.unlink()
        self._vectors_path, self._entries, self._stored = fresh, entries, pos
        self._vec = os.open(fresh, os.O_RDWR)
        self._log = os.open(self._rows_path, os.O_WRONLY | os.O_APPEND)
        log.info("vectors compacted to %d rows in %s", pos, fresh)

    def _vectors_of(self, entry: _Entry) -> np.ndarray:
        data = os.pread(self._vec, entry.rows * self._width, entry.start * self._width)
        return np.frombuffer(data[: len(data) // self._width * self._width], dtype=self.dtype).reshape(-1, self.dim)

    def _erase(self, row_id: str) -> None:
        entry = self._entries.pop(row_id, None)
        if entry is not None:
            os.pwrite(self._vec, bytes(entry.rows * self._width), entry.start * self._width)

    # --- the store
    def get(self, row_id: str, digest: str) -> np.ndarray | None:
        """The row's vectors, checked: bytes damaged on disk (a disk error, an edit) read as NaN or
        infinite numbers, which gave NaN cosines, and recall ranked with them without a word; such
        vectors are none (the caller embeds the text again and puts them back), said in the log."""
        entry = self._entries.get(row_id)
        if entry is None or entry.digest != digest:
            return None
        found = self._vectors_of(entry)
        if len(found) != entry.rows or not np.isfinite(found).all():
            log.warning("the vectors of %s in %s are damaged; they will be computed again", row_id, self.folder)
            self._entries.pop(row_id)
            return None
        return found

    def many(self, wanted: dict[str, str]) -> tuple[list[str], np.ndarray]:
        """As `get` for each row, in one read: an exact search scores every row of a 100k memory
        (longterm.LongTermMemory._exact), where a read per row was most of its time (docs/decisions/0004)."""
        ids, starts = [], []
        entries = self._entries
        for row_id, digest in wanted.items():
            entry = entries.get(row_id)
            if entry is not None and entry.rows == 1 and entry.digest == digest:
                ids.append(row_id)
                starts.append(entry.start)
        if not ids:
            return [], np.zeros((0, self.dim), dtype=np.float32)
        kept = np.memmap(self._vectors_path, dtype=self.dtype, mode="r", shape=(self._stored, self.dim))
        rows = np.asarray(kept[np.asarray(starts)], dtype=np.float32)
        del kept
        whole = np.asarray(np.isfinite(rows).all(axis=1))
        if not whole.all():  # as `get`: damaged bytes are no vectors, computed again by the caller
            for pos in np.flatnonzero(~whole):
                log.warning("the vectors of %s in %s are damaged; they will be computed again", ids[pos], self.folder)
                entries.pop(ids[pos], None)
            ids, rows = [i for i, ok in zip(ids, whole, strict=True) if ok], rows[whole]
        return ids, rows

    def put(self, row_id: str, digest: str, vectors: np.ndarray) -> None:
        rows = np.ascontiguousarray(vectors, dtype=self.dtype).reshape(-1, self.dim)
        self._erase(row_id)
        os.pwrite(self._vec, rows.tobytes(), self._stored * self._width)
        self._entries[row_id] = _Entry(self._stored, len(rows), digest)
        self._stored += len(rows)
        os.write(self._log, orjson.dumps([row_id, self._stored - len(rows), len(rows), digest]) + b"\n")

    def forget(self, row_id: str) -> None:
        if row_id in self._entries:
            self._erase(row_id)
            os.write(self._log, orjson.dumps([row_id]) + b"\n")

    def ids(self) -> list[str]:
        return list(self._entries)

    def close(self) -> None:
        """Once only: a descriptor number closed twice may by then belong to another file."""
        for fd in (self._vec, self._log):
            if fd >= 0:
                os.close(fd)
        self._vec = self._log = -1


class RowVectors:
    """A vector store's rows' vectors by id, read from the index's own copies (`copies`; None keeps
    none, for a store that answers by id in memory anyway): the store is asked only for rows the
    copies lack (a row written before copies were kept), which are copied then."""

    def __init__(self, store: Any, copies: KeyedVectors | None) -> None:
        self.store, self.copies = store, copies

    def put(self, row_id: str, text: str, vector: np.ndarray) -> None:
        if self.copies is not None:
            self.copies.put(row_id, text_digest(text), np.asarray(vector, dtype=np.float32)[None, :])

    def forget(self, row_id: str) -> None:
        if self.copies is not None:
            self.copies.forget(row_id)

    def of(self, texts: dict[str, str]) -> dict[str, np.ndarray]:
        """The vectors of these rows (id -> the row's text) that exist."""
        ids, rows = self.matrix(texts)
        return dict(zip(ids, rows, strict=True))

    def matrix(self, texts: dict[str, str]) -> tuple[list[str], np.ndarray]:
        """The rows of `of`: their ids, and their vectors as one float32 matrix in that order."""
        ids, rows = self._kept(texts)
        held = set(ids)
        fetched = self.store.vectors([i for i in texts if i not in held])
        for row_id, vector in fetched.items():
            self.put(row_id, texts[row_id], vector)
        if not fetched:
            return ids, rows
        more = _matrix(list(fetched.values()), rows.shape[1] if len(rows) else 0)
        return ids + list(fetched), np.concatenate([rows, more]) if len(rows) else more

    def kept(self, texts: dict[str, str]) -> dict[str, np.ndarray]:
        """The vectors of these rows (id -> the row's text) that the copies hold, the store not asked."""
        ids, rows = self._kept(texts)
        return dict(zip(ids, rows, strict=True))

    def _kept(self, texts: dict[str, str]) -> tuple[list[str], np.ndarray]:
        if self.copies is None:
            return [], np.zeros((0, 0), dtype=np.float32)
        return self.copies.many({row_id: text_digest(text) for row_id, text in texts.items()})

    def close(self) -> None:
        if self.copies is not None:
            self.copies.close()


def _matrix(rows: list[Any], dim: int) -> np.ndarray:
    """`rows` stacked as float32 (an empty one of `dim` columns when there are none)."""
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), -1) if rows else np.zeros((0, dim), dtype=np.float32)
