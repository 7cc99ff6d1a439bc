"""The Dreamer: when to dream, and the dream itself (cluster -> summarise -> reconcile -> promote
patterns -> decay/prune/cap -> persist), on a background thread so the agent's turn never waits.

Triggers: `every_n` new episodes (counted by the trace's capture callback), a schedule
(`interval_s`, checked by the worker while it waits), and `request()` (the `dream` skill).
The worker also extracts concepts from new episodes shortly after they are captured. Everything it
writes goes through `SemanticMemory.learn` under `self.lock`, one candidate at a time, so a turn that
takes the same lock waits for at most one write, never for a whole dream. `after_writes` (the memory's
mirror of semantic records into its index) runs under the lock after each batch, the themes and the
pruning, so derived records are searchable as soon as a batch is done.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mettaclaw.memory.core import scopes
from mettaclaw.memory.errors import StoreDamaged
from mettaclaw.memory.stores.cache import CachedEmbedder, embed_ahead
from mettaclaw.memory.stores.keyed_vectors import KeyedVectors
from mettaclaw.progress import progress_bar

from . import patterns as pattern_rules
from . import quantify, themes
from .cluster import choose_k, cluster_vectors, word_vectors
from .concepts import learn_concepts
from .consolidate import Policy, consolidate
from .episodes import DreamEpisode, EpisodeSource, TraceSource
from .report import DreamReport, append_report
from .state import DreamState, load_state, save_state
from .summarise import ExtractiveSummariser, LLMSummariser
from .themes import DEFAULT_THEMES, ThemePolicy
from .window import ThemeWindow

log = logging.getLogger(__name__)
CONCEPT_SAVE_S = 5.0  # the concept mark is saved at most this often while the agent runs
MAX_EMBED_CHARS = 1000


class Dreamer:
    def __init__(self, semantic: Any, source: EpisodeSource | Any, embedder: Any, state_path: str | Path, *,
                 llm: Any = None, summariser: Any = None, every_n: int = 50, interval_s: float | None = None,
                 batch_size: int = 100, max_episodes: int = 20_000, policy: Policy | None = None,
                 extract_concepts: bool = True, clock: Callable[[], float] = time.time, progress: bool = False,
                 known_vectors: Callable[[dict[str, str]], dict[str, np.ndarray]] | None = None,
                 after_writes: Callable[[], None] | None = None, group_by: str | None = None, cluster_size: int = 5,
                 retention: Callable[[float], list[str]] | None = None,
                 cluster_on: str = "embedding", theme_policy: ThemePolicy | None = DEFAULT_THEMES,
                 lock: Any = None, theme_vectors: KeyedVectors | None = None) -> None:
        if every_n < 1:
            raise ValueError(f"every_n must be at least 1 episode, not {every_n}")
        if interval_s is not None and interval_s <= 0:
            raise ValueError(f"interval_s must be positive seconds or None, not {interval_s}")
        if batch_size < 2:
            raise ValueError(f"batch_size must be at least 2, not {batch_size}")
        self.semantic, self.embedder = semantic, embedder
        self._created_at = clock()
        self.source = source if hasattr(source, "after") else TraceSource(source)
        self.state_path = Path(state_path)
        self.reports_path = self.state_path.with_name("reports.jsonl")  # every finished dream's report
        self.summariser = summariser or (LLMSummariser(llm) if llm is not None else ExtractiveSummariser())
        self.every_n, self.interval_s, self.batch_size, self.max_episodes = every_n, interval_s, batch_size, max_episodes
        self.policy, self.extract_concepts, self.clock, self.show_progress = policy or Policy(), extract_concepts, clock, progress
        # id -> text: the vectors already computed for those episodes' texts (the memory index's), which
        # clustering takes instead of embedding each episode a second time
        self.known_vectors, self.after_writes, self.group_by = known_vectors, after_writes, group_by
        self.retention = retention  # per-scope ttl and caps (memory.retention), applied after consolidating
        self._concepts_saved = 0.0
        if cluster_size < 1:
            raise ValueError(f"cluster_size must be at least 1 episode, not {cluster_size}")
        if cluster_on not in ("embedding", "words"):
            raise ValueError(f"cluster_on must be 'embedding' or 'words', not {cluster_on!r}")
        self.cluster_size, self.cluster_on = cluster_size, cluster_on
        self.state: DreamState = load_state(self.state_path)
        # the schedule's origin on the monotonic clock (_schedule_left), on the system's clock only (a
        # simulated one drives the schedule alone, so a benchmark's dreams do not depend on how long it
        # runs): the time the clock says has passed since the last dream, none when it reads earlier
        # than that (it was moved back meanwhile)
        self._steady_origin = None if clock is not time.time else \
            time.monotonic() - max(0.0, clock() - (self.state.last_dream or self._created_at))
        self._erased: set[str] = set()  # episodes erased since the running dream read its episodes
        self.statistics: Any = None  # the statistics layer, linked into the graph after each dream's batches
        self.lock = lock or threading.RLock()  # around every memory write: the turn's memory work holds it too
        # theme_policy None: no themes; theme_vectors: the window's vectors kept across restarts
        self.window = None if theme_policy is None else \
            ThemeWindow(self.state, self.state_path, self.lock, self.source, group_by, theme_policy, embedder, theme_vectors)
        self._dreaming = threading.Lock()  # one dream at a time
        self._wake = threading.Event()
        self._stop = threading.Event()
        if isinstance(self.summariser, LLMSummariser) and self.summariser.stopping is None:
            self.summariser.stopping = self._stop  # a stop abandons a model call under way
        self._requested: str | None = None
        self._thread: threading.Thread | None = None
        self._handling = False  # the worker is handling a wake-up
        self._new = 0
        self.running: DreamReport | None = None
        self.progress: tuple[str, int, int] = ("idle", 0, 0)
        self.last_report: DreamReport | None = None
        self._done = threading.Condition()
        # what the worker logged of its failures since it last wrote (`_failed`): each said once; the
        # last of them, which `status` says until a wake-up works again
        self._failures_said: set[Any] = set()
        self._failure: str | None = None

    # ------------------------------------------------------------------ triggers
    def attach(self, trace: Any) -> None:
        """Listen to the trace: each captured episode wakes concept extraction and counts toward a dream;
        an erased one leaves the theme window at once."""
        trace.on_capture(self.on_episode)
        trace.on_delete(self.on_episode_erased)

    def within(self, trace_end: int) -> None:
        """Bring marks beyond the trace's end (it was cut, or restored from an older copy) back to it:
        every record left was consolidated, and the turns written next, at offsets below the old
        marks, would never be dreamt over."""
        marks = {name: getattr(self.state, name) for name in ("dream_mark", "concept_mark")}
        if any(mark >= trace_end for mark in marks.values()):
            log.warning("the dream's marks %s are beyond the end of the trace (%d bytes): moved back to it",
                        marks, trace_end)
            for name, mark in marks.items():
                setattr(self.state, name, min(mark, trace_end - 1))
            save_state(self.state_path, self.state)

    def on_episode_erased(self, record_id: str, record: Any) -> None:
        """The deletion callback (whoever erases holds the memory's lock): the running dream leaves the
        episode out (`_batch`), and its sentences leave the theme window (window.py)."""
        with self.lock:
            self._erased.add(record_id)
            if self.window is not None:
                self.window.erased(record_id, record)

    def save_erasures(self) -> None:
        """Write the state if erased episodes left the theme window since it was last written."""
        if self.window is not None:
            self.window.save_erasures()

    def on_episode(self, record_id: str, record: Any) -> None:
        """The capture callback: constant time, never touches memory (the turn is waiting on it)."""
        self._new += 1
        if self._new >= self.every_n:
            self._new = 0
            self._requested = self._requested or f"{self.every_n} new episodes"
        self._wake.set()

    def tick(self) -> None:
        """Cheap check the runtime may make each turn: wake the worker when the schedule is due (the
        worker also wakes on its own; this keeps a paused or simulated clock honest)."""
        if self.interval_s is not None and self._schedule_left(self.interval_s) <= 0:
            self._wake.set()

    def request(self, reason: str = "skill") -> bool:
        """Ask for a dream; False when one is already running (the request then waits for the next)."""
        busy = self._dreaming.locked()
        self._requested = reason
        self._wake.set()
        return not busy

    def start(self) -> None:
        """Start the background worker; a dream cut short by a crash is resumed at once."""
        if self.state.in_progress is not None and self._requested is None:
            self._requested = "resume an interrupted dream"
            self._wake.set()
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._work, name="dreamer", daemon=True)
            self._thread.start()

    def finish_session(self, timeout: float, cancel: threading.Event | None = None) -> DreamReport | None:
        """At the end of a session: dream over the episodes not yet consolidated (promote, then
        consolidate; each batch persisted as it finishes), waiting at most `timeout` s, or until
        `cancel` is set (Ctrl-C). What does not fit is resumed from the last finished batch at the
        next start, so a cut or a crash loses nothing."""
        running = self._thread is not None and self._thread.is_alive()
        if not running or timeout <= 0 or not self.source.after(self.state.dream_mark, 1):
            return None
        self.request("session end")
        return self.wait(timeout, cancel)

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop after the current write (a dream in progress resumes from its last batch next time)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._thread is None or not self._thread.is_alive():
            with self.lock:
                save_state(self.state_path, self.state)  # the concept mark, saved at most every CONCEPT_SAVE_S

    def close(self) -> None:
        """Release the theme window's vector store (`Memory.close`, after `stop`); a worker still running
        past `stop`'s timeout keeps it, and the process ending closes it."""
        if self.window is not None and (self._thread is None or not self._thread.is_alive()):
            self.window.close()

    def wait(self, timeout: float | None = None, cancel: threading.Event | None = None) -> DreamReport | None:
        """Block until the worker has nothing left to do: no wake-up unhandled (concepts of new
        episodes, a schedule check), no dream pending or running; the last report. Benchmarks and
        tests pace their input with it, so what a dream sees does not depend on thread timing. A set
        `cancel` ends the wait (looked at every 0.1 s) and asks the running dream to stop."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._done:
            while (self._wake.is_set() and self._thread is not None and self._thread.is_alive()) or self._handling \
                    or self._requested or self._dreaming.locked():
                if cancel is not None and cancel.is_set():
                    self._stop.set()
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._done.wait(min(left if left is not None else 1.0, 0.1 if cancel is not None else 1.0))
        return self.last_report

    def _work(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(timeout=self._until_schedule())
            with self._done:
                self._handling = True
                self._wake.clear()
            if self._stop.is_set():
                break
            dreaming = False
            try:
                wrote = bool(self.extract_concepts and self.extract_pending())
                if self._requested is None and self._schedule_due():
                    self._requested = "schedule"
                if self._requested is not None:
                    dreaming = True
                    self.dream(self._requested)  # raises when it failed
                    wrote = True
                if wrote:
                    self._works()
            except Exception as err:  # a failed dream is reported and retried later; the agent goes on
                if not dreaming and self._requested is not None:
                    self._fail_requested(err)  # failed before it began: failed (`status`), not left pending
                self._failed(err)
            with self._done:
                self._handling = False
                self._done.notify_all()

    def _fail_requested(self, err: Exception) -> None:
        """The dream asked for fails with what failed the wake-up before it (concept extraction): it
        stayed pending, and `wait()` and the session-end dream waited for it until their timeout."""
        reason, self._requested = self._requested or "request", None
        self.last_report = DreamReport(started_at=self.clock(), reason=reason, summariser=self.summariser.name,
                                       error=_failure_text(err))

    def _failed(self, err: Exception) -> None:
        """Log a failure once, not at each wake-up: every new episode wakes the worker, whose concept
        extraction and dream failed on it again and logged the same lines each time, burying the log.
        A damaged store is the user's to fix (its message says how): no traceback, and said once per
        message. Anything else is a fault of ours: its traceback, once per exception type and place.
        Each dream still fails, and `dream status` says why; the log says it again when the worker has
        written since (`_works`), or when it is another failure."""
        said = self._failure = _failure_text(err)
        damaged = isinstance(err, StoreDamaged)
        key = said if damaged else _fault_place(err)
        if key in self._failures_said:
            return
        self._failures_said.add(key)
        if damaged:
            log.error("dream failed: %s (said once while it stays so; each dream fails until it is fixed)", said)
        else:
            log.error("dream failed: %s (its traceback logged once while it recurs)", said, exc_info=err)

    def _works(self) -> None:
        """A wake-up wrote to semantic memory: what was logged as failing works again."""
        self._failure = None
        if self._failures_said:
            self._failures_said.clear()
            log.info("dream: semantic memory can be written again; the dreams go on")

    def _until_schedule(self) -> float | None:
        if self.interval_s is None:
            return None
        return max(0.05, min(self.interval_s, self._schedule_left(self.interval_s)))

    def _schedule_due(self) -> bool:
        if self.interval_s is None:
            return False
        return self._schedule_left(self.interval_s) <= 0 and bool(self.source.after(self.state.dream_mark, 1))

    def _schedule_left(self, interval: float) -> float:
        """Seconds until the scheduled dream is due (0 or less: due), by whichever clock says sooner:
        `clock` from the last dream's time, or (on the system's clock) the monotonic clock from when
        this process saw that time. Why: by `clock` alone, a system clock moved back an hour put the
        next dream off by that hour, until the clock caught up with the last dream's time."""
        by_clock = self._schedule_origin() + interval - self.clock()
        if self._steady_origin is None:
            return by_clock
        return min(by_clock, self._steady_origin + interval - time.monotonic())

    def _schedule_origin(self) -> float:
        """When the schedule counts from: the last dream, or, in a memory that never dreamed, the
        dreamer's creation (a fresh folder's first episode must not start a dream and a model call)."""
        return self.state.last_dream or self._created_at

    # ------------------------------------------------------------------ concepts
    def extract_pending(self, limit: int = 1000) -> dict[str, int]:
        """Concepts of every episode captured since the last call (find-or-create, citing the episode)."""
        counts: dict[str, int] = {}
        episodes = self.source.after(self.state.concept_mark, limit)
        for ep in episodes:
            if self._stop.is_set():
                break
            with self.lock:
                for action, n in learn_concepts(self.semantic, ep).items():
                    counts[action] = counts.get(action, 0) + n
                self.state.concept_mark = ep.mark
        if episodes and (self._stop.is_set() or time.monotonic() - self._concepts_saved >= CONCEPT_SAVE_S):
            with self.lock:  # throttled: the state is rewritten whole, and a lagging mark only re-reads a
                save_state(self.state_path, self.state)  # few episodes (finding a concept again changes nothing)
            self._concepts_saved = time.monotonic()
        return counts

    # ------------------------------------------------------------------ the dream
    def status(self) -> str:
        if self.running is not None:
            phase, done, total = self.progress
            return f"DREAM-RUNNING ({self.running.reason}): {phase} {done}/{total} episodes\n{self.running.text()}"
        if self._failure is not None:  # the worker's last wake-up failed on it, before or in its dream
            return f"DREAM-FAILED: {self._failure}"
        if self.last_report is not None:
            return self.last_report.text()
        pending = len(self.source.after(self.state.dream_mark, self.max_episodes))
        return f"DREAM-IDLE: no dream yet in this run; {pending} episodes waiting to be consolidated"

    def dream(self, reason: str = "request") -> DreamReport:
        """One whole dream in the calling thread (the worker calls this; so may a benchmark)."""
        with self._dreaming:
            self._requested = None
            report = DreamReport(started_at=self.clock(), reason=reason, summariser=self.summariser.name,
                                 resumed=self.state.in_progress is not None)
            self.running = report
            try:
                self._dream(report)
            except BaseException as err:
                report.error = f"{type(err).__name__}: {err}"
                raise
            finally:
                self.running, self.last_report = None, report
                self.progress = ("idle", 0, 0)
            return report

    def _dream(self, report: DreamReport) -> None:
        self.state.in_progress = {"started_at": report.started_at, "from_mark": self.state.dream_mark}
        with self.lock:
            save_state(self.state_path, self.state)
            self._erased.clear()  # what is erased from here on may still be in what is read now
        pending = self.source.after(self.state.dream_mark, self.max_episodes)
        total = len(pending)
        with progress_bar(self.show_progress and total > 0) as bar:
            task = bar.add_task("dreaming", total=total)
            for start in range(0, total, self.batch_size):
                if self._stop.is_set():
                    return  # stopped: in_progress stays set, the next dream resumes here
                batch = pending[start : start + self.batch_size]
                self.progress = ("consolidating", start, total)
                if not self._batch(batch, report):
                    return  # stopped inside the batch, before it wrote: it is dreamt whole next time
                self._written()
                self.state.dream_mark = batch[-1].mark
                with self.lock:
                    save_state(self.state_path, self.state)
                report.episodes += len(batch)
                report.batches += 1
                bar.advance(task, len(batch))
        self._themes(report)
        if self.statistics is not None:
            with self.lock:
                report.statistics_linked = quantify.link(self.semantic.records, self.statistics,
                                                         self.state.statistics_linked, self.clock())
        self.progress = ("decay, prune, cap", total, total)
        result = consolidate(self.semantic, self.clock(), self.policy, lock=self.lock)
        report.decayed, report.edges_pruned = result.decayed, result.edges_pruned
        report.pruned = result.pruned + result.capped
        if self.retention is not None:
            with self.lock:
                report.pruned += self.retention(self.clock())
        if report.pruned:
            self._written()
        report.finished_at = self.clock()
        self.state.in_progress = None
        self.state.last_dream = report.finished_at
        if self._steady_origin is not None:
            self._steady_origin = time.monotonic()
        self.state.dreams += 1
        self.state.last_report = {k: v for k, v in report.to_dict().items() if not isinstance(v, list)}
        with self.lock:
            save_state(self.state_path, self.state)
            append_report(self.reports_path, report)

    def _written(self) -> None:
        if self.after_writes is not None:
            with self.lock:
                self.after_writes()

    def _vectors(self, batch: list[DreamEpisode]) -> np.ndarray:
        if self.cluster_on == "words":
            return word_vectors([ep.text for ep in batch])
        known: dict[str, np.ndarray] = {}
        if self.known_vectors is not None:
            with self.lock:  # the turn writes the index those vectors are read from
                known = self.known_vectors({ep.id: ep.text for ep in batch})
            if isinstance(self.embedder, CachedEmbedder):
                self.embedder.keep({ep.text: known[ep.id] for ep in batch if ep.id in known})
        missing = [ep for ep in batch if ep.id not in known]
        if missing:
            fresh = self.embedder.embed([ep.text[:MAX_EMBED_CHARS] for ep in missing])
            known.update(zip([ep.id for ep in missing], fresh, strict=True))
        return np.asarray([known[ep.id] for ep in batch], dtype=np.float32)

    def _groups(self, batch: list[DreamEpisode]) -> list[list[int]]:
        """Clusters of batch positions; with `group_by`, clustered apart per value of that meta key
        (e.g. the speaker), so a summary is about one participant's experience."""
        parts: dict[str, list[int]] = {}
        for i, ep in enumerate(batch):
            parts.setdefault(str(ep.meta.get(self.group_by, "")) if self.group_by else "", []).append(i)
        vectors = self._vectors(batch)
        groups = []
        for members in parts.values():
            found = cluster_vectors(vectors[members], choose_k(len(members), self.cluster_size)) if len(members) > 1 else [[0]]
            groups.extend([members[i] for i in g] for g in found)
        return groups

    def _batch(self, batch: list[DreamEpisode], report: DreamReport) -> bool:
        """Cluster, summarise, reconcile each candidate, then promote the patterns this batch
        confirmed; False when the dream was stopped while its clusters were summarised (each may wait
        for a model: a batch took minutes, and a stop waited them out), before anything was written.
        An episode erased since the dream read it is left out, and nothing citing it is written
        (checked under the lock that erasing holds): a forgotten statement must not come back as a
        fact the dream was distilling when it was forgotten."""
        batch = [ep for ep in batch if ep.id not in self._erased]
        if not batch:
            return True
        groups = self._groups(batch)
        report.clusters += len(groups)
        if self.window is not None:
            self.window.collect(batch, self._erased)
        # a participant's name is no content ("Yep, Caroline." said twenty times is no fact)
        ignore = themes.participant_names(self.state.theme_sentences, batch, self.group_by)
        per_group = []
        for group in groups:
            if self._stop.is_set():
                return False
            per_group.append(self.summariser.summarise([batch[i] for i in group], ignore))
        if self._stop.is_set():  # stopped while the last cluster was summarised (its model call abandoned)
            return False
        embed_ahead(self.semantic.embedder, [c.content for cands in per_group for c in cands])
        scope_of = {ep.id: ep.meta.get("scope", scopes.DEFAULT) for ep in batch}
        for candidates in per_group:
            report.candidates += len(candidates)
            for cand in candidates:
                owners = {scope_of.get(e, scopes.DEFAULT) for e in cand.episodes}
                if len(owners) != 1:
                    continue  # what several people said is no one's fact: it would show each to the other
                # one write a candidate a batch, citing every episode that said it (each one a confirmation)
                with self.lock:
                    if self._erased.intersection(cand.episodes):
                        continue
                    result = self.semantic.learn(
                        cand.content, kind=cand.kind, tags=cand.tags, category=cand.category,
                        source_episodes=list(cand.episodes), provenance="episodic_consolidation",
                        valid_from=min(self._time_of(batch, e) for e in cand.episodes), scope=owners.pop())
                report.record(result)
        pattern_rules.learn_confirmed(self.semantic, self.state, batch, report, self.lock)
        return True

    def _themes(self, report: DreamReport) -> None:
        if self.window is not None:
            self.window.rebuild(self.semantic, report, self._stop.is_set, self._theme_progress, self._written,
                                self._scope_of)

    def _theme_progress(self, done: int, total: int) -> None:
        self.progress = ("themes", done, total)

    def _scope_of(self, episode_id: str) -> str:
        """Whose an episode is (scopes.py), asked of the source when it can tell."""
        ask = getattr(self.source, "scope_of", None)
        return ask(episode_id) if ask is not None else scopes.DEFAULT

    @staticmethod
    def _time_of(batch: list[DreamEpisode], episode_id: str) -> float:
        return next((ep.time for ep in batch if ep.id == episode_id), batch[0].time)


def _failure_text(err: Exception) -> str:
    """A failure as `dream status` says it: a damaged store by its message, which says how to mend it."""
    return str(err) if isinstance(err, StoreDamaged) else f"{type(err).__name__}: {err}"


def _fault_place(err: BaseException) -> tuple[str, str, int]:
    """The exception's type and the line that raised it: the same fault whatever its message holds (an
    episode's id, a value), so a fault met on every new episode is logged once."""
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return (type(err).__name__, tb.tb_frame.f_code.co_filename, tb.tb_lineno) if tb is not None else (type(err).__name__, "", 0)
