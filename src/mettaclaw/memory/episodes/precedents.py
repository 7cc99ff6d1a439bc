"""Pattern completion by meaning: what the agent did the times an earlier request meant the same as
the current one, and how it ended, as predictions.

Why: the statistics (statistics.py) count by kind of action, named by its program (`shell sh`), and a
request ("please back up my photos folder") never names the program. So the earlier messages nearest
the current ones (one query of the memory index, by vector and BM25, over episode message rows in the
scopes the asker may read) are taken when one's cosine with a current message reaches the embedder's
`SAME_REQUEST` threshold: close by meaning, never by a shared word alone. Each one's turn (the trace's
`turn_of`) gives what was run and how each command ended, counted by kind as the statistics count
(`KindStatistics`), so a prediction passes the same gates (enough evidence, a Wilson bound above one
half): a coin-flip history predicts nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from mettaclaw.memory.stores.embedders import Embedder
from mettaclaw.memory.stores.vectors import StoredItem

from .index import EPISODE_KIND
from .records import Episode, record_offset
from .statistics import KindStatistics, Prediction, action_kind, part_of_day
from .trace import EpisodicTrace

# The cosine at which an earlier message is taken as the same request, by embedder name. MiniLM:
# requests for different things stay below about 0.36, most rephrasings of one request reach 0.45. The
# 64-d hash embedder's cosine is word overlap, with unrelated requests up to about 0.45.
SAME_REQUEST = {"hash": 0.5}
DEFAULT_SAME_REQUEST = 0.45
DEPTH = 30  # each ranking's depth: one index query a turn
MAX_PRECEDENTS = 20  # the closest this many earlier requests are evidence: each costs a trace read or a few
MAX_MESSAGES = 16  # of a turn's messages, the last this many are looked up
MAX_QUERY_CHARS = 2000  # of the messages' text, what BM25 is asked with
MAX_LIKE_CHARS = 80  # of the closest earlier request, what the prediction quotes


def same_request_for(embedder_name: str) -> float:
    return SAME_REQUEST.get(embedder_name, DEFAULT_SAME_REQUEST)


class RequestIndex(Protocol):
    """What the lookup reads of the memory index (index/longterm.LongTermMemory)."""

    @property
    def embedder(self) -> Embedder: ...

    def select(self, **filters: Any) -> set[str] | None: ...

    def rankings(self, text: str, depth: int, mode: str = "hybrid", allowed: set[str] | None = None,
                 where: dict[str, Any] | None = None, vector: Any = None) -> dict[str, list[tuple[str, float]]]: ...

    def row(self, record_id: str) -> StoredItem | None: ...

    def vectors_of(self, texts: dict[str, str]) -> dict[str, np.ndarray]: ...


class Precedents:
    """Predictions from the turns of earlier requests that mean the same as this turn's messages."""

    def __init__(self, index: RequestIndex, trace: EpisodicTrace) -> None:
        self.index, self.trace = index, trace

    def similar(self, messages: Sequence[str], visible: frozenset[str] | None = None) -> list[tuple[str, float]]:
        """The earlier message rows (`ep-...`) that mean the same as one of `messages` (as shown:
        `who: text`, the form their rows were embedded in), with their best cosine: the closest
        MAX_PRECEDENTS, in trace order."""
        said = [m for m in messages if m.strip()][-MAX_MESSAGES:]
        if not said:
            return []
        allowed = self.index.select(kind=EPISODE_KIND, scopes=visible)
        if not allowed:
            return []
        wanted = _unit(np.asarray(self.index.embedder.embed(said), dtype=np.float32))
        lists = self.index.rankings("\n".join(said)[:MAX_QUERY_CHARS], DEPTH, "hybrid", allowed,
                                    vector=_unit(wanted.mean(axis=0, keepdims=True))[0])
        pool = {i: item.document for hits in lists.values() for i, _ in hits
                if record_offset(i) is not None and (item := self.index.row(i)) is not None}
        held = self.index.vectors_of(pool)
        if not held:
            return []
        ids = list(held)
        cosines = (_unit(np.vstack([held[i] for i in ids])) @ wanted.T).max(axis=1)
        floor = same_request_for(self.index.embedder.name)
        found = sorted(((i, float(c)) for i, c in zip(ids, cosines.tolist(), strict=True) if c >= floor),
                       key=lambda hit: -hit[1])[:MAX_PRECEDENTS]
        return sorted(found, key=lambda hit: record_offset(hit[0]) or 0)

    def predictions(self, messages: Sequence[str], now_text: str, visible: frozenset[str] | None = None,
                    limit: int = 3) -> list[Prediction]:
        """What to expect, by kind of action, from what was done for the earlier requests like these
        (`similar`), best evidence first; [] when nothing passes the statistics' gates."""
        closest: dict[str, tuple[float, str, Episode]] = {}  # turn id -> its closest message: (cosine, id, turn)
        for request, cosine in self.similar(messages, visible):
            turn = self.trace.turn_of(request)
            if turn is not None and cosine > closest.get(turn.id, (-2.0,))[0]:
                closest[turn.id] = (cosine, request, turn)  # a turn counts once, however many of its messages are alike
        kinds: dict[str, KindStatistics] = {}
        asked: dict[str, list[tuple[float, str]]] = {}  # kind -> (cosine, request id) of the requests behind it
        for cosine, request, turn in sorted(closest.values(), key=lambda c: c[2].offset):
            for command, (status, ms) in zip(turn.commands, turn.outcomes, strict=False):
                kind = action_kind(command)
                kinds.setdefault(kind, KindStatistics(kind)).add(turn.id, turn.time, int(status), float(ms))
                asked.setdefault(kind, []).append((cosine, request))
        part = part_of_day(now_text)
        found = []
        for kind, stats in kinds.items():
            prediction = stats.prediction(part)
            if prediction is None:
                continue
            requests = dict.fromkeys(r for _, r in asked[kind])
            row = self.index.row(max(asked[kind])[1])
            prediction.requests = len(requests)
            prediction.like = _cut(row.document if row is not None else "")
            found.append(prediction)
        return sorted(found, key=lambda p: -p.confidence)[:limit]


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def _cut(text: str) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= MAX_LIKE_CHARS else one_line[: MAX_LIKE_CHARS - 3] + "..."
