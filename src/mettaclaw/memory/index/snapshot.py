"""The memory index's in-process state (its rows, their filters and BM25 index) kept across restarts.

Why: at open the index mirrors every row of the vector store in process (filters and BM25 answer in
microseconds), and reading 100k rows back out of Chroma and re-indexing their words takes seconds.
A snapshot written at a clean close loads in a fraction of that (docs/decisions/0007).

Why it can be trusted: the first write after open deletes the snapshot (synced) before anything is
written, and a clean close writes a new one. So a snapshot on disk always matches the store, and a
crash leaves no snapshot at all, never a stale one: the next open then rebuilds from the store, as
it would without snapshots. A snapshot that does not match the store's row count, its embedder or the
tokenizer (`text.TERMS_VERSION`), or that cannot be read, is ignored the same way.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import orjson

from mettaclaw.memory.core.gc import no_collection
from mettaclaw.memory.core.text import TERMS_VERSION
from mettaclaw.memory.stores.lexical import BM25Index
from mettaclaw.memory.stores.vectors import StoredItem

from .filters import FilterIndex

log = logging.getLogger(__name__)
FORMAT = 2  # 2: the filter index is kept too, not rebuilt row by row


class Restored(NamedTuple):
    """The memory index's in-process state as a snapshot kept it."""

    items: dict[str, StoredItem]
    bm25: BM25Index
    filters: FilterIndex


def _sync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save(folder: Path, embedder: str, state: Restored) -> None:
    """Write a snapshot beside `folder`, then swap it in (a crash meanwhile leaves none)."""
    fresh, old = folder.with_name(folder.name + ".new"), folder.with_name(folder.name + ".old")
    for leftover in (fresh, old):
        shutil.rmtree(leftover, ignore_errors=True)
    fresh.mkdir(parents=True)
    (fresh / "rows.json").write_bytes(orjson.dumps([[i, it.document, it.metadata] for i, it in state.items.items()]))
    (fresh / "filters.json").write_bytes(orjson.dumps(state.filters.state()))
    state.bm25.save(fresh / "bm25")
    (fresh / "meta.json").write_bytes(orjson.dumps({"format": FORMAT, "embedder": embedder, "rows": len(state.items),
                                                              "terms": TERMS_VERSION}))
    for path in fresh.rglob("*"):
        if path.is_file():
            with open(path, "rb") as fh:
                os.fsync(fh.fileno())
    if folder.exists():
        folder.rename(old)
    fresh.rename(folder)
    _sync_dir(folder.parent)
    shutil.rmtree(old, ignore_errors=True)


def load(folder: Path, embedder: str, rows: int,
         tokens_of: Callable[[list[str]], dict[str, list[str]]]) -> Restored | None:
    """The state a snapshot holds, if it matches the store (`rows`) and the embedder."""
    if not (folder / "meta.json").is_file():
        return None
    with no_collection():
        return _read(folder, embedder, rows, tokens_of)


def _read(folder: Path, embedder: str, rows: int,
          tokens_of: Callable[[list[str]], dict[str, list[str]]]) -> Restored | None:
    try:
        meta = orjson.loads((folder / "meta.json").read_bytes())
        if meta.get("format") != FORMAT or meta.get("embedder") != embedder or meta.get("rows") != rows \
                or meta.get("terms") != TERMS_VERSION:  # its BM25 index holds the words of an earlier tokenizer
            log.info("index snapshot %s does not match the store; rebuilding", folder)
            return None
        items = {i: StoredItem(i, doc, meta) for i, doc, meta in orjson.loads((folder / "rows.json").read_bytes())}
        filters = FilterIndex.restore(orjson.loads((folder / "filters.json").read_bytes()),
                                      {i: item.metadata for i, item in items.items()})
        if len(items) != rows or filters.ids() != items.keys():
            return None
        return Restored(items, BM25Index.restore(folder / "bm25", tokens_of), filters)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, orjson.JSONDecodeError) as err:
        log.warning("index snapshot %s is unreadable (%s); rebuilding", folder, err)
        return None


def discard(folder: Path) -> None:
    """Delete the snapshot and make the deletion durable before the caller writes anything."""
    if folder.exists():
        shutil.rmtree(folder)
        with contextlib.suppress(OSError):
            _sync_dir(folder.parent)

