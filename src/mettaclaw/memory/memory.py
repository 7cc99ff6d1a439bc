"""One agent's whole memory behind one object, opened by `open_memory(config)`.

Why one entry point: the agent, `run.py`, the benchmarks and the memory service must see the same
memory, wired the same way: the same stores, the one recall with the agent's settings, the dreamer,
and one lock around every write (the dream writes from its own thread). Nothing outside this package
wires tiers together.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.ranking import spread_with
from mettaclaw.memory.core.settings import DEFAULT_SETTINGS, RecallSettings
from mettaclaw.memory.core.tags import row_tags
from mettaclaw.memory.core.times import format_time
from mettaclaw.memory.dream.report import read_reports
from mettaclaw.memory.episodes import delivery
from mettaclaw.memory.episodes.index import EPISODE_KIND, EpisodeIndex, TurnRecord, message_id, offset_of
from mettaclaw.memory.episodes.precedents import Precedents
from mettaclaw.memory.episodes.records import Episode
from mettaclaw.memory.index.rows import IndexRow
from mettaclaw.memory.recall import Hit, LayerGraph, RecallPipeline
from mettaclaw.memory.semantic.memory import cites
from mettaclaw.memory.semantic.reading import AmbiguousRef
from mettaclaw.memory.stores.lock import FolderLock
from mettaclaw.messages import Message
from mettaclaw.parser import Command

from . import mirror
from .facts import Facts
from .forgetting import Forgetting

log = logging.getLogger(__name__)

SPREAD_TAKES = "spread starts from a fact, concept, summary or theme (its id, name or text) or an episode (ep-N, act-N)"
RECORD_SCOPES_KEPT = 200_000  # semantic records whose scope spreading keeps at hand (about 30 MB)


class Memory(Forgetting):
    """The tiers (`working`, `episodes` over the trace, the memory `index`, `semantic`), the `dreamer`,
    the one recall (`pipeline`), and `lock`.

    Locking is Memory's alone: every method that writes, or reads what the dream writes, takes `lock`
    (an RLock, shared with the dreamer's thread), and so does `facts`; callers never take it. Reading the
    trace's tail (HISTORY) does not: the trace is appended whole lines at a time, and a prompt must not
    wait for a dream. The tiers are Memory's parts, not an API: code outside this package uses the
    methods here (MemoryAPI, LocalMemoryAPI: api.py).

    Reading writes nothing: a read notes the semantic records it used (their touches: access time,
    stability, strength, Hebbian links), and the writer applies them under the lock, before any write
    of semantic memory (the agent's or the dream's), at the end of each turn (`record_turn`) and at
    `close`: the next turn ranks with them, as when the read wrote them itself."""

    def __init__(self, *, working: Any, episodes: EpisodeIndex, index: Any, semantic: Any, dreamer: Any,
                 pipeline: RecallPipeline, lock: Any, folder_lock: FolderLock | None = None,
                 settings: RecallSettings = DEFAULT_SETTINGS) -> None:
        self.working, self.episodes, self.index, self.semantic = working, episodes, index, semantic
        self.dreamer, self.pipeline, self.lock, self.settings = dreamer, pipeline, lock, settings
        self._folder_lock = folder_lock
        self.priors: Any = None  # what indexing the knowledge priors at open did (priors.PriorsReport)
        self._closed = False
        self._mirror = mirror.Mirror(index, semantic)
        self._mirror.sync()  # copies of records a crash left behind (Mirror: orphaned)
        self.statistics: Any = None  # the statistics layer (statistics.py), listening to the trace
        self.precedents = Precedents(index, episodes.trace)  # what was done for requests like this one
        self.last_context: Any = None  # the last KNOWLEDGE block built: its level and cost
        self.session_end_s = 0.0  # how long close() may dream over what is not consolidated yet
        self.turn_log: Path | None = None  # the agent's turn log (turns.py) in this folder: forgetting reaches it
        self.delivered: Any = None  # keys of the turns sent by agents whose memory this is (delivery.py)
        # a semantic record's scope is set when it is written and never changes: kept, so spreading
        # does not read a record from the store for every node it walks through
        self._record_scopes: dict[str, str] = {}
        self.facts = Facts(semantic, lock, self.sync_mirror, pipeline.relevant)  # the semantic layer, locked

    @property
    def trace(self) -> Any:
        return self.episodes.trace

    @property
    def embedder(self) -> Any:
        return self.index.embedder

    # --- writing
    def record_turn(self, time_text: str, messages: list[Message], commands: list[Command],
                    errors: str | None = None, outcomes: list[tuple[int, float]] = (),
                    key: str | None = None, key_scope: str = scopes.DEFAULT) -> TurnRecord:
        """The turn's trace record (synced) and its episodes, searchable when this returns; how each
        command ended (`outcomes`: (status, ms)) counts in the statistics at once (they listen to
        the trace). A turn sent again under the same `key` by a sender of the same `key_scope` (the
        memory server's scope) is answered as the first time and not recorded twice (delivery.py); the
        key given to a different turn is a ValueError, and nothing is recorded."""
        turn = None if key is None else delivery.digest(time_text, [(m.text, m.who, m.channel) for m in messages],
                                                         [(c.skill, c.args) for c in commands], errors)
        with self.lock:
            if key is not None and self.delivered is not None and \
                    (done := self.delivered.get(key, key_scope, turn)) is not None:
                return done
            record = self.episodes.record(time_text, messages, commands, errors, outcomes=outcomes)
            if key is not None and self.delivered is not None:
                self.delivered.add(key, record, key_scope, turn)
            self.apply_touches()  # the turn's reads count for the next turn (after its record, which they cannot stop)
            return record

    def apply_touches(self) -> int:
        """Write the touches the reads since the last write noted (SemanticMemory.apply_touches): what
        the end of a turn does, for a caller that reads outside turns. How many."""
        with self.lock:
            return self.semantic.apply_touches()

    def remember(self, text: str, *, scope: str = scopes.DEFAULT, **fields: Any) -> Any:
        """Store a memory in `scope` (the agent's own unless given)."""
        tags = fields.get("tags", ())
        fields["tags"] = scopes.with_scope([tags] if isinstance(tags, str) else tags, scope)
        with self.lock:
            return self.index.remember(text, **fields)

    def keep_inference(self, statement: str, belief: str, trail: list[dict[str, Any]], premises: list[str],
                       scope: str = scopes.DEFAULT) -> str:
        """Store a conclusion of the agent's own reasoning as a fact (provenance `agent_inference`,
        confidence its truth value's c) with its proof trail, linked DERIVED_FROM to the memories it was
        drawn from (the semantic record a premise mirrors, else the memory itself); its id. Inferred
        facts are searchable by `query` but are not beliefs, so they never come back as premises and
        their evidence is never counted twice."""
        with self.lock:
            result = self.semantic.learn(statement, kind="fact", atom=belief, provenance="agent_inference",
                                         tags=("inferred",), properties={"trail": trail, "premises": premises},
                                         scope=scope)
            now = self.semantic.clock()
            for premise in dict.fromkeys(premises):
                row = self.index.get(premise)
                record = row.meta.get("semantic_id") if row is not None else None
                target, layer = (record, "semantic") if record else (premise, "episodic")
                self.semantic.records.put_edge(cites(result.id, target, now, layer=layer))
            self._mirror.sync()
        return result.id

    def statistic(self, node: str) -> Any:
        """The statistics layer's node `stat:<scope>:<kind>` (None: not one, or no statistics layer)."""
        return self.statistics.get(node) if self.statistics is not None else None

    def sync_mirror(self) -> None:
        """Bring the index's copies of every semantic record changed since the last call in line with
        the records (each write to semantic memory is followed by this, the dream's included)."""
        with self.lock:
            self._mirror.sync()

    # --- reading (`visible`: the scopes the reader may see, e.g. scopes.reading(); None: every scope)
    def query(self, phrase: str, limit: int = 10, *, layer: str | None = None, explain: bool = False,
              touch: bool = True, visible: frozenset[str] | None = None, lens: Any = None,
              asker: str | None = None) -> list[Hit]:
        """The agent's recall over everything it remembers (recall/pipeline.py), through a `lens` (a
        config.Lens: layer, tags, sinceDays, limit) when one is given; `asker`: who asks (RecallPipeline.run)."""
        since = None
        if lens is not None:
            layer, limit = lens.layer or layer, lens.limit or limit
            if lens.sinceDays is not None:
                since = format_time(self.semantic.clock() - lens.sinceDays * 86_400)
        with self.lock:
            hits = self.pipeline.run(phrase, limit, layer=layer, explain=explain, visible=visible,
                                      tags=tuple(lens.tags) if lens is not None else (), since=since, asker=asker)
            if touch:  # noted, applied by the writer (the class's docstring)
                self.semantic.touch([h.id for h in hits if h.layer == "semantic"])
            return hits

    def beliefs(self, phrase: str, limit: int, visible: frozenset[str] | None = None) -> list[Any]:
        """The stored beliefs (memories carrying an atom) best matching `phrase`: premises for `infer`."""
        with self.lock:
            return self.index.query(phrase, limit=limit, kind="belief", scopes=visible)

    def around(self, when: str, each_side: int, visible: frozenset[str] | None = None) -> list[Any]:
        """The trace records nearest a time (`episodes`) that a reader of the `visible` scopes may
        read, `each_side` before it and `each_side + 1` from it on (as `EpisodicTrace.around`). The
        trace's nearest records, filtered, were all: after 30 of alice's turns, bob's `episodes` around
        that time showed nothing of his. Where the trace's window holds too few, the reader's turns the
        index holds fill each side."""
        with self.lock:
            return self._around(when, each_side, visible)

    def _around(self, when: str, each_side: int, visible: frozenset[str] | None) -> list[Any]:
        found = [e for e in self.trace.around(when, each_side) if scopes.may_read(visible, e)]
        before = sum(1 for e in found if e.time < when)
        if (before >= each_side and len(found) - before > each_side) or (turns := self._turns_of(visible)) is None:
            return found
        at = bisect.bisect_left(turns, (when,))
        found = self._with_turns(found, [offset for _, offset in turns[max(0, at - each_side):at + each_side + 1]],
                                 visible)
        found.sort(key=lambda e: (e.time, e.offset))
        at = sum(1 for e in found if e.time < when)
        return found[max(0, at - each_side):at + each_side + 1]

    def latest(self, count: int, visible: frozenset[str] | None = None) -> list[Any]:
        """The last trace records written (`episodes` alone) that a reader of the `visible` scopes may
        read, oldest first: the last `count` of the trace, filtered, were "no episodes recorded yet"
        for bob once others had said `count` things since his last turn."""
        with self.lock:
            found = [e for e in self.trace.latest(count) if scopes.may_read(visible, e)]
            if len(found) >= count or (turns := self._turns_of(visible)) is None:
                return found
            found = self._with_turns(found, sorted(offset for _, offset in turns)[-count:], visible)
            return sorted(found, key=lambda e: e.offset)[-count:]

    def _turns_of(self, visible: frozenset[str] | None) -> list[tuple[str, int]] | None:
        """(time, offset) of each turn a reader of the `visible` scopes may read that the index holds
        rows of, by time; None when every turn is theirs (no other scope holds any), where the trace's
        own nearest records are the answer."""
        if visible is None or self.index.select(scopes=visible) is None:
            return None
        turns: dict[int, str] = {}
        for row_id in self.index.select(scopes=visible, kind=EPISODE_KIND) or ():
            offset, row = offset_of(row_id), self.index.row(row_id)
            if offset is not None and row is not None:
                turns[offset] = str(row.metadata.get("time", ""))
        return sorted((time_text, offset) for offset, time_text in turns.items())

    def _with_turns(self, found: list[Any], offsets: list[int], visible: frozenset[str] | None) -> list[Any]:
        """`found` and the trace records of these turns, each once (those erased or not readable left out)."""
        have = {e.offset: e for e in found}
        for offset in offsets:
            if offset not in have and scopes.may_read(visible, episode := self.trace.get(message_id(offset))):
                have[offset] = episode
        return list(have.values())

    def readable_episode(self, ref: str, visible: frozenset[str] | None = None) -> Episode | None:
        """The trace record an episode id (`ep-N` or `act-N`) names, if there is one and a reader of
        the `visible` scopes may read it; else None."""
        episode = self.turn(ref)
        return episode if scopes.may_read(visible, episode) else None

    def turn(self, ref: str) -> Episode | None:
        """The trace record of the turn an episode id (`ep-N` or `act-N`) names, whoever's it is."""
        offset = offset_of(ref)
        if offset is None:
            return None
        with self.lock:
            return self.trace.get(message_id(offset))

    def turn_erased(self, ref: str) -> bool:
        """Whether an episode id names a turn whose trace record was erased (forgotten)."""
        offset = offset_of(ref)
        with self.lock:
            return offset is not None and self.trace.erased(message_id(offset))

    def trace_tail(self, max_chars: int, visible: frozenset[str] | None = None) -> str:
        """The last trace records fitting in `max_chars` that a reader of `visible` may read (HISTORY).
        Without the lock: the trace is appended whole lines at a time, so a prompt never waits for a dream."""
        return self.trace.tail(max_chars, scopes.readable_by(visible))

    def row(self, row_id: str) -> IndexRow | None:
        """The memory index's row of a memory or an episode (`ep-N`, `act-N`), if there is one."""
        with self.lock:
            return self.index.get(row_id)

    def belief_rows(self, start: int, count: int) -> tuple[list[IndexRow], int]:
        """A page of the stored beliefs, newest first, and how many there are."""
        with self.lock:
            ids = sorted(self.index.ids_by(kind="belief"),
                         key=lambda i: self.index.row(i).metadata.get("ts", 0), reverse=True)
            return [row for i in ids[start:start + count] if (row := self.index.get(i)) is not None], len(ids)

    def spread(self, ref: str, visible: frozenset[str] | None = None) -> tuple[str, str, dict[str, list[tuple[str, float]]]]:
        """What `ref` activates, grouped by layer, best first (nodes of other scopes left out), with the
        id and text of where it starts: a semantic record (id, name or exact text) or an episode
        (`ep-N`, `act-N`: the graph links an episode to its neighbouring turns and to what was distilled
        from it, and `spread ep-12` answered "no record"). LookupError naming what it takes if neither."""
        ref = (ref or "").strip()
        with self.lock:
            if offset_of(ref) is not None:
                if self.index.row(ref) is None or self.readable_episode(ref, visible) is None:
                    raise LookupError(f"no episode {ref[:100]!r}: {SPREAD_TAKES}")
                node, text = ("episodic", ref), self.text_of(ref) or ""
            else:
                try:
                    record = self.semantic.resolve(ref, visible)
                except AmbiguousRef:
                    raise
                except LookupError as err:
                    memory = self.index.row(ref) is not None and (visible is None or self.visible(ref, visible))
                    raise LookupError(f"{ref[:100]!r} is a memory (from remember), which no link leads from: "
                                      f"{SPREAD_TAKES}" if memory else f"{err}: {SPREAD_TAKES}") from None
                node, text = ("semantic", record.id), record.content
            graph = self.pipeline.graph if visible is None else self.pipeline.graph.within(lambda n: self.visible(n, visible))
            return node[1], text, spread_with(graph, {node: 1.0}, self.settings)

    def visible(self, record_id: str, visible: frozenset[str]) -> bool:
        """May a reader of the `visible` scopes see this record (a memory, episode, statistic or
        semantic record)? What spreading asks of each node it would walk through."""
        row = self.index.row(record_id)
        if row is not None:
            return scopes.allows(visible, row_tags(row.metadata))
        stat = self.statistic(record_id)
        if stat is not None:
            return stat.scope in visible
        scope = self._record_scopes.get(record_id)
        if scope is None:
            record = self.semantic.get(record_id)
            if record is None:
                return False
            if len(self._record_scopes) >= RECORD_SCOPES_KEPT:
                self._record_scopes.clear()
            scope = self._record_scopes[record_id] = scopes.of_tags(record.tags)
        return scope in visible

    def knowledge(self, message: str, budget: int, visible: frozenset[str] | None = None,
                  budget_ms: float | None = None) -> str:
        """The prompt's KNOWLEDGE block for a new message ("" when nothing relevant is known), built
        within `budget_ms` (semantic reading.context; the level reached is kept in `last_context`)."""
        if not message.strip() or budget <= 0:
            return ""
        with self.lock:
            self.last_context = self.semantic.context(message, budget, visible, budget_ms)
        block = self.last_context.text
        return f"KNOWLEDGE:\n{block}" if block else ""

    def predictions(self, context: str, recent: list[Command], now_text: str,
                    visible: frozenset[str] | None = None, messages: Sequence[str] = ()) -> str:
        """The prompt's PREDICTIONS block: how the actions the context names (or the last commands)
        ended before, and those done for earlier requests meaning the same as this turn's `messages`
        (as shown, `who: text`), with counts and source episodes ("" without evidence). A kind found
        both ways is shown by name: that counts all of its history, not only the requests like this one."""
        from mettaclaw.memory.episodes.statistics import render

        by_name = self.statistics.predictions(context, recent, now_text, visible)
        if not any(m.strip() for m in messages):
            return render(by_name)
        with self.lock:  # the dream writes the memory index
            by_meaning = self.precedents.predictions(messages, now_text, visible)
        return render(by_name + by_meaning)

    def cites(self, record_id: str) -> list[str]:
        """The episodes a shown id stands for: an episode itself, or what a dream record cites."""
        with self.lock:
            row = self.index.get(record_id)
            if row is not None:
                return [row.id] if row.kind == "episode" else [c for c in str(row.meta.get("cites", "")).split("|") if c]
            record = self.semantic.get(record_id)
            return list(record.source_episodes) if record is not None else []

    def text_of(self, record_id: str) -> str | None:
        """What a record of any layer says: a memory's or an episode's text, a statistic in words, a
        semantic record's content; None for an id of nothing."""
        with self.lock:
            row = self.index.get(record_id)
            if row is not None:
                return row.text
            stat = self.statistic(record_id)
            if stat is not None:
                return stat.verbal()
            record = self.semantic.get(record_id)
            return record.content if record is not None else None

    def stats(self, visible: frozenset[str] | None = None) -> dict[str, Any]:
        """How much a reader of `visible` holds, by tier, and the embedder the memory was built with."""
        with self.lock:
            kinds = Counter(self.index.row(i).metadata.get("kind") for i in self.index.ids_by(scopes=visible))
            records = self.semantic.recall(1000, mode="logical", visible=visible, touch=False)
            return {"embedder": self.index.stats()["embedder"], "index_rows_by_kind": dict(kinds),
                    "current_records_by_kind": dict(Counter(r.record.kind for r in records))}

    def overview(self) -> dict[str, Any]:
        """Everything the inspector's overview shows: the index, the semantic store, tags, how actions
        ended (the statistics' kinds, most evidence first), the dream's state and the agent's pin."""
        with self.lock:
            kinds = sorted(self.statistics, key=lambda s: -s.n)[:50] if self.statistics is not None else []
            state = self.dreamer.state if self.dreamer is not None else None
            return {"index": self.index.stats(), "semantic": self.facts.summary(),
                    "tags": list(self.facts.tags().items())[:30], "kinds": kinds,
                    "dreams": getattr(state, "dreams", 0), "last_dream": getattr(state, "last_dream", None),
                    "pins": self.working.text}

    def dream_reports(self) -> list[dict[str, Any]]:
        """Every finished dream's report, oldest first (none without a dreamer)."""
        return read_reports(self.dreamer.reports_path) if self.dreamer is not None else []

    def dream_progress(self) -> tuple[str, int, int] | None:
        """What the dream is doing now (its stage, done, of), or None without a dreamer."""
        return self.dreamer.progress if self.dreamer is not None else None

    def tick(self) -> None:
        """Give the dreamer its turn to start a due dream (once a turn; it runs in its own thread)."""
        if self.dreamer is not None:
            self.dreamer.tick()

    # --- lifecycle
    def close(self, cancel: threading.Event | None = None) -> None:
        """End the session: a last dream over what was not consolidated yet (at most
        `session_end_s`, cut short when `cancel` is set: Ctrl-C), then stop the dreamer after its
        current write, flush and close the stores (the statistics saved; semantic memory writes the
        touches still noted), release the folder."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.dreamer is not None:
                try:
                    self.dreamer.finish_session(self.session_end_s, cancel)
                finally:
                    self.dreamer.stop()
                    self.dreamer.close()
        finally:
            for part in (self.index, self.semantic, self.statistics):
                if part is None:
                    continue
                try:
                    part.close()
                except Exception:  # one store failing to close must not keep the others open
                    log.exception("closing %s failed", type(part).__name__)
            if self._folder_lock is not None:
                self._folder_lock.release()


def open_memory(config: Any, *, embedder: Any = None, llm: Any = None, clock: Callable[[], float] = time.time,
                settings: RecallSettings = DEFAULT_SETTINGS, progress: bool = False, dream: bool = True,
                importing: FolderLock | None = None) -> Memory:
    """The memory a config describes, under `config.memoryDir` (locked for this process; refused, with
    StoreDamaged, while an import into it has not finished, unless this is that import: `importing`
    is the lock it took before it wrote, used here and left for it to release once it is done):
    `embeddingprovider` picks the embedder (or pass one), `chromaMode` the stores, `recallMode` the
    index rankings, `knowledgePriorsDir` the priors indexed now, `dreamEvery`/`dreamInterval` when the
    background dreamer (started unless `dream=False`) consolidates, with `llm` as its summariser.
    With `memoryServer` set the memory is that server's (remote.py: a RemoteMemory)."""
    if config.memoryServer:
        import os

        from .remote import open_remote

        return open_remote(config, dict(os.environ))  # type: ignore[return-value]
    from mettaclaw.memory.dream import Dreamer, TraceSource
    from mettaclaw.memory.episodes.delivery import DeliveredTurns
    from mettaclaw.memory.episodes.statistics import OutcomeStatistics
    from mettaclaw.memory.episodes.trace import EpisodicTrace
    from mettaclaw.memory.index.longterm import open_longterm
    from mettaclaw.memory.index.priors import index_priors
    from mettaclaw.memory.semantic import open_semantic
    from mettaclaw.memory.stores.cache import CachedEmbedder
    from mettaclaw.memory.stores.embedders import make_embedder, signature
    from mettaclaw.memory.stores.keyed_vectors import FileKeyedVectors

    from .errors import StoreDamaged
    from .transfer import unfinished
    from .working import WorkingMemory

    folder_lock = FolderLock(config.memory_path()) if importing is None else importing
    opened: list[Any] = []
    try:
        if importing is None and (why := unfinished(config)) is not None:
            raise StoreDamaged(why)
        embedder = CachedEmbedder(embedder or make_embedder(config))  # the dream re-embeds what the turn just did
        index = open_longterm(config, embedder, settings, progress)
        opened.append(index)
        semantic = open_semantic(config, embedder, clock)
        opened.append(semantic)
        trace = EpisodicTrace(config.memory_path("history.metta"))
        episodes = EpisodeIndex(trace, index, settings)
        caught_up = episodes.catch_up(progress)
        if caught_up:
            log.info("indexed %d episodes from the trace that the index did not hold yet", caught_up)
        statistics = OutcomeStatistics(config.memory_path("statistics.json"))
        trace_end = trace.path.stat().st_size
        statistics.catch_up(trace.records_after(statistics.mark if statistics.mark < trace_end else -1), trace_end)
        trace.on_capture(statistics.observe)
        priors = index_priors(index, config.folder("knowledgePriorsDir"), progress=progress)
        graph = LayerGraph(semantic, adjacent=episodes.neighbours, adjacency_weight=settings.adjacency_weight)
        pipeline = RecallPipeline(index, semantic, graph, settings=settings, mode=config.recallMode)
        memory = Memory(working=WorkingMemory(config.memory_path("pins.txt")), episodes=episodes, index=index,
                        semantic=semantic, dreamer=None, pipeline=pipeline, lock=threading.RLock(),
                        folder_lock=folder_lock if importing is None else None, settings=settings)
        pipeline.in_scopes = memory.visible
        memory.priors, memory.statistics = priors, statistics
        memory.delivered = DeliveredTurns(config.memory_path("delivered.jsonl"))
        memory.session_end_s = config.sessionEndDream
        memory.turn_log = config.memory_path("turns.jsonl")
        window_vectors = FileKeyedVectors(config.memory_path("dream", "theme-vectors"), signature(embedder),
                                          embedder.dim, "float32")
        opened.append(window_vectors)
        memory.dreamer = dreamer = Dreamer(
            semantic, TraceSource(trace), embedder, config.memory_path("dream", "state.json"), llm=llm,
            known_vectors=index.vectors_of, after_writes=memory.sync_mirror, every_n=config.dreamEvery,
            interval_s=config.dreamInterval or None, clock=clock, group_by="who", lock=memory.lock,
            retention=(lambda now: memory.evict(config.scopePolicies, now)) if config.scopePolicies else None,
            theme_vectors=window_vectors)
        dreamer.statistics = statistics  # the dream links them into the graph (dream/quantify.py)
        dreamer.attach(trace)
        dreamer.within(trace_end)
    except BaseException:
        for part in reversed(opened):
            part.close()
        if importing is None:
            folder_lock.release()
        raise
    if dream:
        dreamer.start()
    return memory
