"""What the dream phase reads: episodes as plain values, and the sources it reads them from.

The dream never holds a position in memory only: every source orders its episodes by a *watermark*
(the trace: byte offset; a list: its index), so the runner can persist "consolidated up to here" and a
crash mid-dream resumes from the last finished batch instead of losing or double-counting anything.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.times import epoch_seconds

log = logging.getLogger(__name__)


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
    """A `trace.Episode` as a DreamEpisode (the mark is its byte offset, from the id `ep-<offset>`):
    its actions are their kinds (statistics.action_kind: `shell make`, not every shell call alike), and
    a command that ended with a failure status is a failed outcome even without an error text."""
    from mettaclaw.memory.episodes.statistics import action_kind

    actions = tuple(action_kind(cmd) for cmd in episode.commands)
    failed = next((status for status, _ in getattr(episode, "outcomes", ()) if status > 0), 0)
    outcome = f"exit {failed}" if failed and not episode.errors else outcome_of(episode.errors)
    # the text is what was said; what was done (and how it ended) is matched as a pattern instead
    return DreamEpisode(episode.id, epoch_seconds(episode.time) or 0.0, episode.message, actions,
                        outcome if actions else None, int(episode.id.removeprefix("ep-")),
                        {"who": ", ".join(getattr(episode, "who", ())),
                         "scope": scopes.of_episode(getattr(episode, "who", ()), getattr(episode, "channel", ""))})


class EpisodeSource(Protocol):
    """Episodes strictly after a watermark, oldest first, at most `limit` of them."""

    def after(self, mark: int, limit: int) -> list[DreamEpisode]: ...


class TraceSource:
    """The episodic trace as a source. A watermark is a record's byte offset, so the episodes after it
    are read by seeking there: neither a long trace nor each new episode costs a scan of the file."""

    SCOPES_KEPT = 50_000  # more than a theme window cites (themes.ThemePolicy.total)

    def __init__(self, trace: Any) -> None:
        self.trace = trace
        self._scopes: dict[str, str] = {}  # an episode's scope never changes: each theme rebuild asks again

    def after(self, mark: int, limit: int) -> list[DreamEpisode]:
        found = []
        for episode in itertools.islice(self.trace.records_after(mark), limit):
            try:
                found.append(from_trace(episode))
            except ValueError as err:  # a time no reader parses (see EpisodeIndex._index): passed over
                log.warning("trace record %s not dreamt over: %s", episode.id, err)
        self._keep({ep.id: str(ep.meta["scope"]) for ep in found})
        return found

    def has(self, episode_id: str) -> bool:
        """Whether the trace still holds this episode (it may have been erased)."""
        return self.trace.get(episode_id) is not None

    def scope_of(self, episode_id: str) -> str:
        if episode_id not in self._scopes:
            episode = self.trace.get(episode_id)  # a read and a parse of the trace record
            if episode is None:
                return scopes.DEFAULT
            self._keep({episode_id: scopes.of_episode(episode.who, episode.channel)})
        return self._scopes[episode_id]

    def _keep(self, found: dict[str, str]) -> None:
        if len(self._scopes) + len(found) > self.SCOPES_KEPT:
            self._scopes.clear()
        self._scopes.update(found)


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
