"""Semantic knowledge where the agent already looks: each current fact or summary (learned by the agent or
written by the dream) is mirrored into the memory index (kind `derived`, tags `derived` and `sem:<record id>`, meta `cites` =
the episodes it came from, `semantic_id` = the record). This is the spec's INFORMS link: one `query`
ranks raw memories and distilled knowledge on the same scale (BM25 + vectors), and a derived memory
counts for exactly the episodes it cites.

The semantic record stays the source of truth: a sync replaces the mirror of every record it is given
(rewritten, superseded, pruned or unchanged), so replaying a batch after a crash converges.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.tags import RECORD_TAG
from mettaclaw.memory.core.times import format_time

MIRRORED_KINDS = ("fact", "summary")
log = logging.getLogger(__name__)


def mirror_tag(record_id: str) -> str:
    return f"{RECORD_TAG}{record_id}"


def sync(longterm: Any, semantic: Any, record_ids: Iterable[str]) -> dict[str, int]:
    """Make long-term memory's copies of these records match the records (write, refresh or forget)."""
    items, stale = [], []
    for rid in dict.fromkeys(record_ids):
        rec = semantic.get(rid)
        keep = rec is not None and rec.current and rec.kind in MIRRORED_KINDS
        for mid in longterm.ids_by(tags=[mirror_tag(rid)]):
            old = longterm.get(mid)
            if not keep or old is None or old.text != rec.content or old.meta.get("cites") != "|".join(rec.source_episodes):
                stale.append(mid)
            else:
                keep = False  # already exact
        if keep:
            items.append({"text": rec.content, "kind": "derived", "source": "dream",
                          "time": format_time(rec.valid_from) or None, "tags": scopes.with_scope(["derived", mirror_tag(rid)], scopes.of_tags(rec.tags)),
                          "extra": {"cites": "|".join(rec.source_episodes), "semantic_id": rid}})
    forgotten = len(longterm.forget_many(stale))  # before the rewrites: a copy may be written with its old text
    if items:
        longterm.remember_many(items)
    return {"written": len(items), "forgotten": forgotten}


def orphaned(longterm: Any, semantic: Any) -> set[str]:
    """The records that have a copy in the index but are no longer in semantic memory."""
    mirrored = {str(row.metadata["semantic_id"]) for mid in longterm.ids_by(kind="derived")
                if (row := longterm.row(mid)) is not None and row.metadata.get("semantic_id")}
    return mirrored - set(semantic.records.ids()) if mirrored else set()


def lost_semantic(copies: int) -> str:
    """What to tell the user when the semantic store is empty but the index held copies of its records:
    it was deleted or moved aside and a new, empty one made. The copies are what is left of those
    facts, and the sync that follows removes them (a record gone is no knowledge to show), so the
    user hears it once, at the start that finds it; before, it went without a word."""
    return (f"the semantic store is empty, though the memory index held copies of {copies} of its records: it was "
            "deleted or moved aside, and a new one was made. The facts, concepts, themes and links it held are gone "
            "(their copies are removed now) unless the folder is restored from a copy or an export; the episodes "
            "they came from are still in the trace")


def cites(memory: Any) -> list[str]:
    """The episodes a long-term memory stands for: the ones a derived memory cites."""
    return [c for c in str(memory.meta.get("cites", "")).split("|") if c]


class Mirror:
    """Keeps the index's copies in line with semantic memory: it hears every change the semantic layer
    announces (the agent's writes and the dream's alike) and `sync` brings those records' copies in line."""

    def __init__(self, index: Any, semantic: Any) -> None:
        self.index, self.semantic = index, semantic
        # a record forgotten by a process that ended before it synced the record's copy (killed
        # between the two) left a row that still shows the forgotten text: synced away at the first sync
        self._changed: set[str] = orphaned(index, semantic)
        if self._changed and not semantic.records.count():
            said = lost_semantic(len(self._changed))
            log.error("%s", said)
            getattr(index, "notices", []).append(said)  # said at start-up: the log alone is not read there
        semantic.on_capture(self._heard)
        semantic.on_delete(self._heard)

    def _heard(self, record_id: str, _record: Any) -> None:
        self._changed.add(record_id)

    def sync(self) -> dict[str, int]:
        """Sync every record changed since the last call (the caller holds the memory's write lock)."""
        changed, self._changed = self._changed, set()
        return sync(self.index, self.semantic, sorted(changed)) if changed else {"written": 0, "forgotten": 0}
