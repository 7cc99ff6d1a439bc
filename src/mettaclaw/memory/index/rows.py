"""The rows of the memory index as callers see them (`IndexRow`, `RememberResult`), the metadata a row
is written with (`prepare_row`) and the texts it is embedded and BM25-indexed by; kept apart from
longterm.py, which stores and ranks them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.tags import row_tags, tag_keys
from mettaclaw.memory.core.times import time_key
from mettaclaw.memory.stores.vectors import StoredItem

# Metadata keys owned by this module; `extra` may not overwrite them.
RESERVED_KEYS = {"time", "ts", "source", "kind", "tags", "atom", "hash"}


@dataclass
class IndexRow:
    """One row of the memory index (a memory, an episode's message or action, a prior's chunk, a
    mirrored semantic record) as callers see it."""

    id: str
    text: str
    time: str  # "YYYY-MM-DD HH:MM:SS" or "knowledge_prior"
    source: str
    kind: str
    tags: tuple[str, ...]
    atom: str | None = None
    score: float = 0.0
    meta: dict = field(default_factory=dict)  # extra metadata (breadcrumb, context, score parts)


@dataclass
class RememberResult:
    id: str
    created: bool  # False: an exact duplicate existed and was refreshed instead


def prepare_row(text: str, time: str | None, source: str, tags: Any, kind: str, atom: str | None,
                extra: dict | None, row_id: str | None = None) -> tuple[str, dict[str, Any]]:
    """A row to write: its text and the metadata the index filters, deduplicates and ranks it by,
    refusing what could not be stored or read back (empty text, tags with the separator, reserved keys)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("cannot remember an empty text")
    when, ts = time_key(time)
    tag_tuple = tuple(dict.fromkeys(str(t).strip() for t in ([tags] if isinstance(tags, str) else tags or ())))
    if any(not t or "|" in t for t in tag_tuple):
        raise ValueError(f"tags must be non-empty and contain no '|': {tag_tuple!r}")
    clash = RESERVED_KEYS.intersection(extra or {})
    if clash:
        raise ValueError(f"extra may not set reserved keys {sorted(clash)}")
    meta: dict[str, Any] = dict(extra or {})
    meta.update(time=when, source=source, kind=kind, tags="|" + "|".join(tag_tuple) + "|" if tag_tuple else "",
                hash=dedup_key(text, kind, source, atom, row_id, scopes.of_tags(tag_tuple)))
    if ts is not None:
        meta["ts"] = ts
    if atom:
        meta["atom"] = atom
    meta.update(dict.fromkeys(tag_keys(tag_tuple), True))
    return text, meta


def dedup_key(text: str, kind: str, source: str, atom: str | None, row_id: str | None,
               scope: str = scopes.DEFAULT) -> str:
    """Equal keys are one memory. A row with its own id (an episode) is only ever itself: "yes" said
    twice is two episodes. Priors are owned per file, so one paragraph in two files stays two, and
    memories per scope, so two people saying the same thing keep two memories."""
    if row_id is not None:
        return "id:" + row_id
    owner = source if kind == "prior" else ""
    if scope != scopes.DEFAULT:
        owner += "\x1e" + scope
    return hashlib.sha256("\x1f".join((kind, owner, atom or "", text)).encode()).hexdigest()[:32]


def vector_text(text: str, meta: dict[str, Any]) -> str:
    """What is embedded: the text itself, led by its breadcrumb when it has one (a prior's headings)."""
    crumb = str(meta.get("breadcrumb") or "").strip()
    return f"{crumb}\n{text}" if crumb else text


def lexical_text(text: str, meta: dict[str, Any]) -> str:
    """What BM25 sees: the text (counted twice, so its own words outweigh its context), its context,
    breadcrumb and tags, and its date in words ("8 May 2023") so a query naming a month finds it.

    Context (e.g. the turns around a reply) helps find a memory but is not part of what recall hands
    back, so it costs no prompt tokens. Embedding it instead blurred the vectors in our measurements.
    """
    parts = [text, text, str(meta.get("context") or ""), str(meta.get("breadcrumb") or ""),
             " ".join(row_tags(meta))]
    if meta.get("ts") is not None:
        from datetime import UTC, datetime

        when = datetime.fromtimestamp(float(meta["ts"]), UTC)
        parts.append(f"{when.day} {when:%B %Y}")
    return "\n".join(p for p in parts if p)


def to_row(item: StoredItem, score: float = 0.0, parts: dict[str, Any] | None = None) -> IndexRow:
    meta = dict(item.metadata)
    tags = row_tags(meta)
    meta.pop("tags", None)
    for tag in tags:  # every tag's key, also those written before tag_keys left some out
        meta.pop(f"tag:{tag}", None)
    extra = {k: v for k, v in meta.items() if k not in RESERVED_KEYS}
    if parts:
        extra.update(parts)
    return IndexRow(id=item.id, text=item.document, time=str(meta.get("time", "")), source=str(meta.get("source", "")),
                  kind=str(meta.get("kind", "memory")), tags=tags, atom=meta.get("atom"), score=score, meta=extra)
