"""What recall ranks: one `Candidate` per node of any layer, and the `Candidates` every stage takes and
returns (pipeline.py); what recall reads of the index and of semantic memory (`RecallIndex`,
`RecallSemantic`).

Why one type: an index row (an episode, a memory, a prior, a dream record's mirror) and a semantic
record (found by the semantic ranking or by spreading) are ranked, measured and shown alike; each
knows its key, layer and text, and which of the two it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from mettaclaw.memory.core.ranking import fuse
from mettaclaw.memory.stores.embedders import Embedder
from mettaclaw.memory.stores.vectors import StoredItem

if TYPE_CHECKING:
    from mettaclaw.memory.semantic.records import RecallResult, SemanticRecord

    from .present import Hit


class RecallIndex(Protocol):
    """What recall reads of the memory index (index.longterm.LongTermMemory)."""

    embedder: Embedder

    def __len__(self) -> int: ...

    def select(self, **filters: Any) -> set[str] | None: ...

    def rankings(self, text: str, depth: int, mode: str = "hybrid", allowed: set[str] | None = None,
                 where: dict[str, Any] | None = None, vector: Any = None) -> dict[str, list[tuple[str, float]]]: ...

    def lexical_scores(self, text: str, documents: list[str]) -> list[float]: ...

    def row(self, record_id: str) -> StoredItem | None: ...

    def senders(self) -> frozenset[str]: ...

    def sentence_vectors(self, ids: list[str]) -> dict[str, Any]: ...

    def vectors_of(self, texts: dict[str, str]) -> dict[str, Any]: ...


class RecallSemantic(Protocol):
    """What recall reads of semantic memory (semantic.SemanticMemory): its ranking, its records and,
    through `records.links_of`, its links (LayerGraph)."""

    records: Any

    def __len__(self) -> int: ...

    def get(self, record_id: str) -> SemanticRecord | None: ...

    def recall(self, query: str | int | None = None, limit: int = 10, **filters: Any) -> list[RecallResult]: ...


@dataclass(eq=False)
class Candidate:
    """A node recall ranks: an index `row`, or a semantic `record` the index does not hold as one;
    `key` is its fusion key (a dream record's mirror row is its record's id), `text` what it says.
    The stages fill in what they measure (None: not measured)."""

    key: str
    layer: str  # episodic | longterm | semantic
    text: str
    row: StoredItem | None = None
    record: SemanticRecord | None = None
    cosine: float | None = None  # the whole text's cosine with the query, on the floor's scale (vector ranking)
    sentence: float | None = None  # its best sentence's, on the floor's scale (the sentences stage)
    passage: str | None = None  # a long text's best passage (text.passages), what is shown of it
    relevance: float | None = None  # what the floor holds it to (relevance.relevance)
    ranks: dict[str, int] = field(default_factory=dict)  # its rank in each ranking it is in
    score: float = 0.0  # the fused score, and what spreading adds
    spread: float = 0.0  # the activation spreading brought it, in units of the best score


class Candidates:
    """What a recall's stages pass on: every node met (`seen`, by key), the named `rankings` of keys,
    and the candidates still `contending` for a place (every ranked one until the floor holds them
    to it; spreading adds what it reaches), by node. `shown` is the list made for the reader, once a
    stage makes it (dedup); `floor`, once the floor stage set it, is what spreading's finds face too."""

    def __init__(self, index: RecallIndex) -> None:
        self.index = index
        self.seen: dict[str, Candidate] = {}
        self.rankings: dict[str, list[str]] = {}
        self.contending: dict[str, Candidate] = {}
        self.measured: list[str] = []  # the keys whose best sentence is measured, in the order measured
        self.weights: Mapping[str, float] | None = None  # fusion's, once the fuse stage ran
        self.rrf_k = 0
        self.floor: float | None = None
        self.shown: list[Hit] | None = None

    def row(self, row_id: str) -> Candidate | None:
        """The candidate an index row is (made on first meeting; None when the index has no such
        row): a mirrored dream record is its semantic record, keyed by the record's id."""
        row = self.index.row(row_id)
        if row is None:
            return None
        kind, semantic_id = row.metadata.get("kind"), row.metadata.get("semantic_id")
        if kind == "derived" and semantic_id:
            key, layer = str(semantic_id), "semantic"
        else:
            key, layer = row_id, "episodic" if kind == "episode" else "longterm"
        return self.seen.setdefault(key, Candidate(key, layer, row.document, row=row))

    def record(self, record: SemanticRecord) -> Candidate:
        """The candidate a semantic record is (the one met first under its id, a mirror row maybe)."""
        return self.seen.setdefault(record.id, Candidate(record.id, "semantic", record.content, record=record))

    def rank(self, name: str, keys: list[str]) -> None:
        """Add a ranking (keys best first); its keys contend, and once fused the scores count it."""
        self.rankings[name] = keys
        for key in keys:
            self.contending.setdefault(key, self.seen[key])
        if self.weights is not None:
            self.fuse(self.weights, self.rrf_k)

    def fuse(self, weights: Mapping[str, float], k: int) -> None:
        """Each ranked candidate's score: the weighted reciprocal-rank fusion of the rankings."""
        self.weights, self.rrf_k = weights, k
        scores, ranks = fuse(self.rankings, weights, k)
        for key, score in scores.items():
            self.seen[key].score, self.seen[key].ranks = score, ranks[key]

    def best(self) -> list[Candidate]:
        """The contending candidates, best score first."""
        return sorted(self.contending.values(), key=lambda c: -c.score)

    def indexed(self, candidates: Iterable[Candidate]) -> dict[str, str]:
        """row id -> key of those of `candidates` that are index rows."""
        return {c.row.id: c.key for c in candidates if c.row is not None}
