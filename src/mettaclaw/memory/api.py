"""What code outside memory may use of a memory, as Protocols: the seams the rest of mettaclaw is typed by.

- `MemoryAPI`: what an agent's runtime and its bridges use, wherever the memory is kept. `Memory` (in
  this process) and `RemoteMemory` (on a memory server) both implement it; one contract test runs over
  both (tests/test_memory_api.py).
- `LocalMemoryAPI`: all that, plus what the memory skills, the memory server's tools and the inspector
  use of a memory held in this process (`Memory`). A remote agent's skills run on its server, over the
  server's `Memory`.
- `FactsAPI`: the semantic layer as those callers use it (`Memory.facts`).

Locking is the memory's own: every method takes what lock it needs; a caller never holds one.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from mettaclaw.memory.episodes.index import TurnRecord
from mettaclaw.memory.episodes.records import Episode
from mettaclaw.memory.index.rows import IndexRow
from mettaclaw.memory.recall.pipeline import Hit
from mettaclaw.memory.semantic.reading import Context
from mettaclaw.memory.semantic.records import Edge, LearnResult, RecallResult, SemanticRecord
from mettaclaw.memory.semantic.store import RecordFilter
from mettaclaw.memory.working import WorkingMemory
from mettaclaw.messages import Message
from mettaclaw.parser import Command


class PriorsSummary(Protocol):
    def summary(self) -> str:
        """One line for the user at start: what the knowledge priors gave."""
        ...


@runtime_checkable
class MemoryAPI(Protocol):
    """An agent's memory as its runtime uses it: the pins, the trace of its turns, the prompt's
    KNOWLEDGE and PREDICTIONS blocks, the dream's schedule, and closing."""

    working: WorkingMemory
    session_end_s: float  # how long close() may dream over what is not consolidated yet

    @property
    def priors(self) -> PriorsSummary: ...

    @property
    def last_context(self) -> Context | None:
        """The last KNOWLEDGE block built here (its level and cost), None when none was."""
        ...

    def record_turn(self, time_text: str, messages: list[Message], commands: list[Command],
                    errors: str | None = None, outcomes: list[tuple[int, float]] = ()) -> TurnRecord:
        """The turn's trace record and its episodes, searchable when this returns."""
        ...

    def knowledge(self, message: str, budget: int, visible: frozenset[str] | None = None,
                  budget_ms: float | None = None) -> str: ...

    def predictions(self, context: str, recent: list[Command], now_text: str,
                    visible: frozenset[str] | None = None, messages: Sequence[str] = ()) -> str: ...

    def trace_tail(self, max_chars: int, visible: frozenset[str] | None = None) -> str: ...

    def tick(self) -> None: ...

    def close(self, cancel: threading.Event | None = None) -> None: ...


class FactsAPI(Protocol):
    """Semantic memory (facts, concepts, their typed links and versions) as skills and tools use it."""

    def learn(self, content: str, **fields: Any) -> LearnResult: ...

    def relate(self, a: str, relation: str, b: str, weight: float | None = None,
               scope: str | None = None) -> Edge: ...

    def supersede(self, old: str, new_content: str, **fields: Any) -> LearnResult: ...

    def recall(self, query: str | None = None, limit: int = 10, **filters: Any) -> list[RecallResult]: ...

    def history(self, ref: str, visible: frozenset[str] | None = None) -> list[SemanticRecord]: ...

    def get(self, record_id: str) -> SemanticRecord | None: ...

    def relation_types(self) -> set[str]: ...


class StoredFactsAPI(FactsAPI, Protocol):
    """Facts with the listings the inspector and the memory server read (Memory.facts)."""

    def tags(self, visible: frozenset[str] | None = None) -> dict[str, int]: ...

    def select(self, where: RecordFilter, limit: int,
               after: tuple[float, str] | None = None) -> list[SemanticRecord]: ...

    def edges_of(self, record_id: str) -> list[Edge]: ...

    def versions(self, lineage: str) -> list[SemanticRecord]: ...

    def changes(self, record_id: str) -> list[dict[str, Any]]: ...


@runtime_checkable
class LocalMemoryAPI(MemoryAPI, Protocol):
    """A memory held in this process: everything an agent's runtime uses, and what its memory skills, the
    memory server's tools and the inspector read and write."""

    facts: StoredFactsAPI
    dreamer: Any  # the dream's controller (request, start, status) for the `dream` skill; None: no dreams

    def remember(self, text: str, *, scope: str = ..., **fields: Any) -> Any: ...

    def query(self, phrase: str, limit: int = 10, *, layer: str | None = None, explain: bool = False,
              touch: bool = True, visible: frozenset[str] | None = None, lens: Any = None,
              asker: str | None = None) -> list[Hit]: ...

    def beliefs(self, phrase: str, limit: int, visible: frozenset[str] | None = None) -> list[Any]: ...

    def keep_inference(self, statement: str, belief: str, trail: list[dict[str, Any]], premises: list[str],
                       scope: str = ...) -> str: ...

    def apply_touches(self) -> int:
        """Write the uses the reads since the last write noted (a query writes nothing itself)."""
        ...

    def forget(self, ref: str, visible: frozenset[str] | None = None) -> list[str]: ...

    def forget_scope(self, scope: str) -> int: ...

    def around(self, when: str, each_side: int, visible: frozenset[str] | None = None) -> list[Episode]: ...

    def latest(self, count: int, visible: frozenset[str] | None = None) -> list[Episode]: ...

    def readable_episode(self, ref: str, visible: frozenset[str] | None = None) -> Episode | None: ...

    def turn(self, ref: str) -> Episode | None: ...

    def turn_erased(self, ref: str) -> bool: ...

    def row(self, row_id: str) -> IndexRow | None: ...

    def belief_rows(self, start: int, count: int) -> tuple[list[IndexRow], int]: ...

    def spread(self, ref: str, visible: frozenset[str] | None = None
               ) -> tuple[str, str, dict[str, list[tuple[str, float]]]]: ...

    def text_of(self, record_id: str) -> str | None: ...

    def cites(self, record_id: str) -> list[str]: ...

    def statistic(self, node: str) -> Any: ...

    def stats(self, visible: frozenset[str] | None = None) -> dict[str, Any]: ...

    def overview(self) -> dict[str, Any]: ...

    def dream_reports(self) -> list[dict[str, Any]]: ...

    def dream_progress(self) -> tuple[str, int, int] | None: ...
