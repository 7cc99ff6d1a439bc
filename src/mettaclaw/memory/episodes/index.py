"""Episodes are memories at once: each message and what the agent did in its turn become rows of the
memory index (words and meaning) in the same call that appends the turn to the trace.

Ids: `ep-<offset>` is the message whose trace record starts at byte <offset> (`who`: its sender);
`act-<offset>` is what the agent did, from the record that holds it. A turn is a grouping of episodes,
never one row: fifty lines that arrived while the model was thinking are fifty episodes. A record
written before that rule that holds several messages is indexed as one row a message (`ep-<offset>`,
`ep-<offset>.1`, ...): see records.message_parts. Rows of the form before (one a turn) are indexed
again from the trace at open (`EPISODE_FORMAT`). The trace stays the durable log and the
index is caught up from it at open (every record after the last one indexed), so a crash between the
trace write and the index write loses nothing, and an index deleted by hand is rebuilt.

Why context: a reply ("Yes, last Tuesday!") is found through the question it answers. A row carries
the text of the channel's few previous episodes as index-only context (BM25 words, never shown, never
embedded), and only earlier ones: the index never holds text from a turn later than the row's own.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.settings import DEFAULT_SETTINGS, RecallSettings
from mettaclaw.memory.core.tags import WHO_TAG, row_tags
from mettaclaw.memory.core.times import time_key
from mettaclaw.messages import ANONYMOUS, Message, sender_name
from mettaclaw.parser import Command
from mettaclaw.progress import progress_bar

from .records import Episode, message_parts, part_id, record_offset
from .trace import EpisodicTrace

log = logging.getLogger(__name__)

EPISODE_KIND = "episode"
AGENT = "agent"
# Memory's own bookkeeping is not an experience: an indexed `query X` would make every later question
# about X find its own earlier asking first, and `remember X` would show X twice (memory keeps X itself,
# with its own time).
MEMORY_SKILLS = frozenset({"query", "recall", "episodes", "history", "spread", "dream", "remember", "learn",
                           "relate", "supersede", "forget"})
MAX_ACTION_CHARS = 2000
# Rows written under the one-row-a-message rule carry it; a folder whose episode rows do not is indexed again.
EPISODE_FORMAT = 2


@dataclass(frozen=True)
class TurnRecord:
    """What one turn wrote: its trace record and the episode rows indexed from it."""

    turn_id: str
    episode_ids: list[str] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)  # each message's episode, in the order they came


def senders(messages: list[Message], channel: str = "") -> tuple[tuple[str, ...], str]:
    """Who spoke in a turn (each once, in order; the anonymous terminal user is `user`) and on which
    channel: what a trace record stores and its scope is decided by."""
    who = tuple(dict.fromkeys(m.who or ANONYMOUS for m in messages))
    return who, messages[0].channel if messages else channel


def message_id(offset: int) -> str:
    return f"ep-{offset}"


def action_id(offset: int) -> str:
    return f"act-{offset}"


def offset_of(row_id: str) -> int | None:
    """The trace offset an episode row (`ep-N` or `act-N`) comes from (None for anything else)."""
    return record_offset(row_id, ("ep-", "act-"))


def action_text(commands: Iterable[Command]) -> str:
    """What the agent did, as one text: what it said (`agent: ...`) and the skills it ran, memory's own
    bookkeeping left out."""
    lines = []
    for cmd in commands:
        if cmd.skill in MEMORY_SKILLS:
            continue
        args = " ".join(a for a in cmd.args if a)
        lines.append(f"{AGENT}: {args}" if cmd.skill == "send" else f"{AGENT} ran {cmd.skill} {args}".rstrip())
    text = "\n".join(lines)
    return text if len(text) <= MAX_ACTION_CHARS else text[: MAX_ACTION_CHARS - 3] + "..."


class EpisodeIndex:
    """The trace plus its rows in the memory index, with each channel's episodes in order (adjacency)."""

    def __init__(self, trace: EpisodicTrace, index: Any, settings: RecallSettings = DEFAULT_SETTINGS) -> None:
        self.trace, self.index, self.settings = trace, index, settings
        self._order: dict[str, list[int]] = {}  # channel -> offsets of its rows, ascending
        self._rows: dict[int, list[str]] = {}  # offset -> its row ids
        self._channel: dict[str, str] = {}  # row id -> channel
        self.outdated = 0  # episode rows of an earlier format, found at open: `catch_up` indexes the trace again
        for row_id in index.ids_by(kind=EPISODE_KIND):
            meta = index.row(row_id).metadata
            self._track(row_id, str(meta.get("source", "")))
            self.outdated += meta.get("episode_format", 1) != EPISODE_FORMAT
        for offsets in self._order.values():
            offsets.sort()

    def _track(self, row_id: str, channel: str) -> None:
        offset = offset_of(row_id)
        if offset is None:
            return
        self._channel[row_id] = channel
        rows = self._rows.setdefault(offset, [])
        if row_id not in rows:
            rows.append(row_id)
            order = self._order.setdefault(channel, [])
            if not order or order[-1] != offset:
                if order and offset < order[-1]:
                    bisect.insort(order, offset)
                else:
                    order.append(offset)

    # --- writing
    def record(self, time: str, messages: list[Message], commands: list[Command],
               errors: str | None = None, channel: str = "", outcomes: list[tuple[int, float]] = ()) -> TurnRecord:
        """Append the turn to the trace (synced), then index its episodes; returns their ids."""
        channel = senders(messages, channel)[1]
        said = [(m.shown(), senders([m])[0]) for m in messages]
        written = self.trace.append_turn(time, said, commands, errors, channel, outcomes)
        ids = self._index(written)
        return TurnRecord(written[-1].id, ids, [e.id for e in written[: len(messages)]])

    def catch_up(self, progress: bool = False) -> int:
        """Index every trace record after the last one indexed; returns how many rows were written. When
        the index holds rows of an earlier format (`outdated`), every episode row is dropped and the whole
        trace indexed again, with a progress bar when `progress` (and said in the log).

        Rows of turns beyond the trace's end (the file was cut, or restored from an older copy) are
        dropped first, said at start-up and in the log: their records are gone, and the next turn written
        at such an offset was merged into the old row under the same id (another speaker's scope and words)."""
        self._drop_beyond(self.trace.path.stat().st_size)
        if self.outdated:
            return self._reindex(progress)
        last = max(self._rows, default=-1)
        return self._index_records(self.trace.records_after(last))

    def _index_records(self, records: Iterable[Episode], advance: Any = None,
                       known: dict[str, Any] | None = None) -> int:
        """Index these records in batches (`advance(offset)` after each); `known`: vectors by text, handed
        to the embedder's cache before each batch, so a row whose text is unchanged is not embedded again."""
        written = 0
        batch: list[Episode] = []
        for episode in records:
            batch.append(episode)
            if len(batch) >= 256:
                written += self._index_batch(batch, known)
                if advance is not None:
                    advance(batch[-1].offset)
                batch = []
        return written + self._index_batch(batch, known)

    def _index_batch(self, batch: list[Episode], known: dict[str, Any] | None) -> int:
        keep = getattr(self.index.embedder, "keep", None)
        if known and keep is not None:
            texts = [t for e in batch for t in (e.message, *(p for _, p in message_parts(e)), action_text(e.commands))]
            keep({t: known[t] for t in texts if t in known})
        return len(self._index(batch))

    def _reindex(self, progress: bool) -> int:
        """Drop every episode row and index the trace again (one row a message). Why not row by row: an
        old turn row's id is its first message's, and its words and vector would stay under it."""
        rows = [row_id for ids in self._rows.values() for row_id in ids]
        old = {row_id: row.document for row_id in rows if (row := self.index.row(row_id)) is not None}
        known = {old[i]: v for i, v in self.index.vectors_of(old).items()}  # what is unchanged is not embedded again
        log.warning("the memory index holds %d episode rows of an earlier format (one row a turn): indexing the "
                    "trace %s again, one row a message", self.outdated, self.trace.path)
        self.index.forget_many(rows)
        self._order.clear()
        self._rows.clear()
        self._channel.clear()
        self.outdated = 0
        size = self.trace.path.stat().st_size
        with progress_bar(progress) as bar:
            task = bar.add_task("indexing the trace again, one row a message", total=size)
            written = self._index_records(iter(self.trace), lambda offset: bar.update(task, completed=offset), known)
            bar.update(task, completed=size)
        return written

    def _drop_beyond(self, end: int) -> None:
        beyond = sorted(o for o in self._rows if o >= end)
        if not beyond:
            return
        rows = [row_id for offset in beyond for row_id in self._rows[offset]]
        said = (f"the trace {self.trace.path} ends at byte {end}, before {len(beyond)} turns the index held (it was "
                f"cut, or restored from an older copy): those turns are gone from memory (their {len(rows)} index "
                "rows were dropped with them)")
        log.warning("%s", said)
        self.index.notices.append(said)  # said at start-up too: the log alone is not read there
        self.index.forget_many(rows)
        for row_id in rows:
            self.forget(row_id)

    def _index(self, episodes: list[Episode], replace: bool = False) -> list[str]:
        items: list[dict[str, Any]] = []
        pending: dict[str, tuple[str, str, str]] = {}  # this batch's rows, not yet indexed: id -> (text, time, scope)
        for episode in episodes:
            try:
                made = self.rows(episode, pending)
            except ValueError as err:  # a time no reader parses (written before the trace checked times,
                log.warning("trace record %s not indexed: %s", episode.id, err)  # or by hand): not a folder that never opens
                continue
            for item in made:
                self._track(item["id"], item["source"])
                pending[item["id"]] = (item["text"], item["time"], scopes.of_tags(item["tags"]))
                items.append(item)
        if items:
            self.index.remember_many(items, replace=replace)
        return [item["id"] for item in items]

    def rows(self, episode: Episode, pending: dict[str, tuple[str, str, str]] | None = None) -> list[dict[str, Any]]:
        """The index rows of one trace record: a row a message it holds, and one of what the agent did."""
        out = []
        pending = {} if pending is None else pending
        time = time_key(episode.time)[0]
        channel = episode.channel or "terminal"
        turn_scope = scopes.with_scope([], scopes.of_episode(episode.who, episode.channel))
        parts = [("", episode.message)] if episode.offset >= self.trace.one_message_from else message_parts(episode)
        several = len(parts) > 1
        for n, (speaker, text) in enumerate(parts):
            if not text.strip():
                continue
            who = (speaker,) if several else (episode.who or (ANONYMOUS,))
            scope = scopes.with_scope([], scopes.of_episode(who, episode.channel)) if several else turn_scope
            context = self._context(channel, episode.offset, time, pending, scopes.of_tags(scope))
            row = {"id": part_id(episode.offset, n), "text": text, "time": time, "source": channel,
                   "kind": EPISODE_KIND, "tags": [f"{WHO_TAG}{sender_name(w) or ANONYMOUS}" for w in who] + scope,
                   "extra": {"context": context, "episode_format": EPISODE_FORMAT}}
            out.append(row)
        acted = action_text(episode.commands)
        if acted:  # what the agent did answering someone is that person's business too
            out.append({"id": action_id(episode.offset), "text": acted, "time": time, "source": channel,
                        "kind": EPISODE_KIND, "tags": [f"{WHO_TAG}{AGENT}", *turn_scope],
                        "extra": {"episode_format": EPISODE_FORMAT}})
        return out

    def _context(self, channel: str, offset: int, time: str, pending: dict[str, tuple[str, str, str]],
                 scope: str) -> str:
        """The text of the channel's previous few episodes of the same scope (words for BM25, from
        earlier turns only: another person's words never help find this one's)."""
        if self.settings.context_turns <= 0:
            return ""
        order = self._order.get(channel, [])
        now = time_key(time)[1] or 0.0
        before = order[: bisect.bisect_left(order, offset)][-self.settings.context_turns :]
        texts = []
        for prior in before:
            for row_id in self._rows.get(prior, []):
                if row_id in pending:
                    text, when, owner = pending[row_id]
                else:
                    row = self.index.row(row_id)
                    if row is None:
                        continue
                    text, when = row.document, str(row.metadata.get("time", ""))
                    owner = scopes.of_tags(row_tags(row.metadata))
                if owner != scope:
                    continue
                ts = time_key(when)[1]
                if ts is not None and now - ts <= self.settings.context_gap_s:
                    texts.append(text)
        return "\n".join(texts)

    def erase(self, offset: int) -> list[str]:
        """Forget one turn: its rows leave the index, its record is erased from the trace, and the next
        rows on its channel, whose BM25 context held its words, are indexed again without them. The
        ids forgotten ([] when there was no such turn)."""
        return self.erase_many([offset])

    def erase_many(self, offsets: Iterable[int]) -> list[str]:
        """`erase` for several turns, with one index delete for all their rows and each later turn
        whose context held their words indexed again once. Why: one by one, each turn would cost a
        store delete of its own and re-index neighbours that are erased next, all under the memory's
        lock (docs/decisions/0019).

        Order, for a crash at any point: the later turns are rewritten in place first (never deleted:
        `catch_up` only indexes records after the last one indexed, so a neighbour deleted before a
        kill -9 stayed out of the index for good), then the erased turns' rows go, and their trace
        records last, so a forget cut short can be asked again."""
        doomed = sorted(set(offsets))
        rows: list[str] = []
        later: set[int] = set()
        for offset in doomed:
            own = list(self._rows.get(offset, []))
            channel = self._channel.get(own[0]) if own else None
            order = self._order.get(channel, []) if channel is not None else []
            start = bisect.bisect_right(order, offset)
            later.update(order[start : start + self.settings.context_turns])
            rows += own
        episodes = [e for e in (self.trace.get(message_id(o)) for o in sorted(later - set(doomed))) if e is not None]
        again = [row_id for episode in episodes for row_id in self._rows.get(episode.offset, [])]
        for row_id in rows + again:
            self.forget(row_id)
        self._index(episodes, replace=True)
        self.index.forget_many(rows)
        gone: list[str] = []
        for offset in doomed:
            erased = self.trace.erase(message_id(offset))
            own = [r for r in rows if offset_of(r) == offset]
            gone += own or ([message_id(offset)] if erased else [])
        return gone

    # --- reading
    def neighbours(self, row_id: str) -> list[str]:
        """The rows of the turns just before and after this one on its channel (adjacency in time)."""
        offset, channel = offset_of(row_id), self._channel.get(row_id)
        if offset is None or channel is None:
            return []
        order = self._order.get(channel, [])
        pos = bisect.bisect_left(order, offset)
        near = [order[i] for i in (pos - 1, pos + 1) if 0 <= i < len(order)]
        own = [r for r in self._rows.get(offset, []) if r != row_id]
        return own + [r for o in near for r in self._rows.get(o, [])]

    def forget(self, row_id: str) -> None:
        """Drop a row from the adjacency (the index row itself is the caller's to delete)."""
        offset, channel = offset_of(row_id), self._channel.pop(row_id, None)
        rows = self._rows.get(offset, []) if offset is not None else []
        if row_id in rows:
            rows.remove(row_id)
        if offset is not None and not rows:
            self._rows.pop(offset, None)
            order = self._order.get(channel or "", [])
            pos = bisect.bisect_left(order, offset)
            if pos < len(order) and order[pos] == offset:
                del order[pos]
