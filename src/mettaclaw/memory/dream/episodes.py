"""What the dream phase reads: episodes as plain values, and the sources it reads them from.

The dream never holds a position in memory only: every source orders its episodes by a *watermark*
(the trace: byte offset; a list: its index), so the runner can persist "consolidated up to here" and a
crash mid-dream resumes from the last finished batch instead of losing or double-counting anything.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mettaclaw.memory.semantic.records import parse_time


@dataclass(frozen=True)
class DreamEpisode:
    """One episode as consolidation needs it: its id (the provenance every fact cites), time, text,
    the actions taken (the skills used) and the outcome (`success` or the error)."""

    id: str
    time: float
    text: str
    actions: tuple[str, ...] = ()
    outcome: str | None = None
    mark: int = 0  # position in its source: strictly increasing
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def outcome_of(errors: str | None) -> str:
    """`success`, or `error: <first words of the error>` so equal failures group together."""
    if not errors:
        return "success"
    head = " ".join(errors.replace(":", " ").split()[:4]).lower()
    return f"error: {head}"


def from_trace(episode: Any) -> DreamEpisode:
    """A `trace.Episode` as a DreamEpisode (the mark is its byte offset, from the id `ep-<offset>`)."""
    actions = tuple(cmd.skill for cmd in episode.commands)
    # the text is what was said; what was done (and how it ended) is matched as a pattern instead
    return DreamEpisode(episode.id, parse_time(episode.time) or 0.0, episode.message, actions,
                        outcome_of(episode.errors) if actions else None, int(episode.id.removeprefix("ep-")),
                        {"who": ", ".join(getattr(episode, "who", ()))})


class EpisodeSource(Protocol):
    """Episodes strictly after a watermark, oldest first, at most `limit` of them."""

    def after(self, mark: int, limit: int) -> list[DreamEpisode]: ...


class TraceSource:
    """The episodic trace as a source. The first read scans the file (the trace's public iteration);
    after that, episodes announced by the trace's capture callback (`push`) are served from memory,
    so a busy agent does not re-read a long trace for every new episode. A consumer further back
    than what memory holds gets a scan again."""

    def __init__(self, trace: Any, keep: int = 20_000) -> None:
        self.trace, self.keep = trace, keep
        self._lock = threading.Lock()
        self._base: int | None = None  # everything after this mark is in self._recent
        self._recent: list[DreamEpisode] = []
        self.fed = False  # True once the trace's capture callback feeds us: only then is memory complete

    def push(self, episode: Any) -> None:
        ep = from_trace(episode)
        with self._lock:
            self.fed = True
            if self._base is not None and ep.mark > self._base and (not self._recent or ep.mark > self._recent[-1].mark):
                self._recent.append(ep)
                if len(self._recent) > self.keep:
                    dropped = self._recent[: len(self._recent) - self.keep]
                    del self._recent[: len(dropped)]
                    self._base = dropped[-1].mark

    def after(self, mark: int, limit: int) -> list[DreamEpisode]:
        with self._lock:
            if self.fed and self._base is not None and mark >= self._base:
                start = bisect.bisect_right([e.mark for e in self._recent], mark)
                return self._recent[start : start + limit]
        out: list[DreamEpisode] = []
        last = -1
        for episode in self.trace:
            offset = int(episode.id.removeprefix("ep-"))
            last = offset
            if offset > mark and len(out) < limit:
                out.append(from_trace(episode))
        with self._lock:
            self._base = last
            self._recent = [e for e in self._recent if e.mark > last]
        return out


class ListSource:
    """Episodes held in a list (benchmarks, tests, imported conversations); mark = index + 1."""

    def __init__(self, episodes: Iterable[DreamEpisode] = ()) -> None:
        self.episodes: list[DreamEpisode] = []
        self.extend(episodes)

    def extend(self, episodes: Iterable[DreamEpisode]) -> None:
        for ep in episodes:
            self.episodes.append(DreamEpisode(ep.id, ep.time, ep.text, ep.actions, ep.outcome,
                                              len(self.episodes) + 1, ep.meta))

    def after(self, mark: int, limit: int) -> list[DreamEpisode]:
        return self.episodes[max(0, mark) : max(0, mark) + limit]
