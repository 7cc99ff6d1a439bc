"""The semantic record, its edges and small value types shared by every module of the layer.

Times are float seconds since the epoch so that "as of" and decay arithmetic never parse strings;
strings in the trace's format (`YYYY-MM-DD HH:MM:SS`, local time) are converted at the boundary.
"""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from mettaclaw.textutil import quoted

KINDS = ("fact", "concept", "theme", "summary")
INDEX_TAG = "index"  # a record stored as an index over episodes (learn(index=True)): kept out of the graph
PROVENANCES = ("episodic_consolidation", "agent_inference", "direct_ingestion", "hybrid")


def check_kinds(kinds: tuple[str, ...]) -> None:
    """ValueError naming the first of `kinds` no record can have: asking for one is a mistake, and
    `recall sky kind=facts` (or the inspector's `/records?kind=facts`) answered that nothing was found."""
    if unknown := [k for k in kinds if k not in KINDS]:
        raise ValueError(f"kind {quoted(unknown[0])} is not one of {', '.join(KINDS)}")


def confidence_from(reinforcements: int) -> float:
    """The spec's evidence curve: more independent confirmations, more confidence, never certainty."""
    return min(0.99, 0.5 + 0.1 * math.sqrt(max(0, reinforcements)))


def confirmations_from(kind: str, source_episodes: list[str], new_episodes: list[str] | None = None) -> int:
    """How many confirmations a write brings: each source episode not seen before is one, a source-less
    assertion is one, and re-reading known episodes is none, so confidence tracks evidence rather than
    how often the dream looked. A summary's episodes are what it compresses, not confirmations.
    `new_episodes`: those of `source_episodes` the record did not have yet (None: a new record)."""
    eps = source_episodes if new_episodes is None else new_episodes
    if not source_episodes:
        return 1
    if not eps:
        return 0
    return 1 if kind == "summary" else len(eps)


def new_id() -> str:
    return str(uuid.uuid4())


# what a record's id looks like (a semantic record's or a memory's uuid, an episode's ep-/act-<offset>):
# text of this shape names a record, never a new concept
_ID_SHAPE = re.compile(r"^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?:ep|act)-\d+)$", re.IGNORECASE)


_UUID_IN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4,}", re.IGNORECASE)
_AROUND_ID = "\"'`()[]<>.,;:!? "  # what prose puts around an id: `forget "<id>".`


def looks_like_id(ref: str) -> bool:
    return bool(_ID_SHAPE.match((ref or "").strip()))


def bare_id(ref: str) -> str | None:
    """The id `ref` is once the quotes, brackets and punctuation prose puts around one are gone, in
    lower case as ids are written (`"<ID>".` is `<id>`); None when it is no id."""
    bare = (ref or "").strip(_AROUND_ID)
    return bare.lower() if _ID_SHAPE.match(bare) else None


def mentions_id(ref: str) -> bool:
    """Whether `ref` is or holds something shaped like a record's id, cut short or among other words
    (`<id>.`, `id <id>`): text no new concept should be named by."""
    return looks_like_id(ref) or bare_id(ref) is not None or bool(_UUID_IN.search(ref or ""))


@dataclass
class SemanticRecord:
    """One fact, concept, theme or summary, with its evidence, validity interval and lineage.

    `lineage` is shared by every version of one fact (the id of the first version), so the full
    history of a fact is one lookup; `subject`/`relation`/`object`/`polarity` hold the extracted
    triple that contradiction detection compares.
    """

    content: str
    kind: str = "fact"
    name: str = ""
    name_norm: str = ""
    content_key: str = ""
    category: str | None = None
    properties: dict[str, Any] = field(default_factory=dict)
    atom: str | None = None
    truth: tuple[float, float] | None = None
    confidence: float = 0.6
    confidence_set: bool = False
    reinforcements: int = 1
    strength: float = 1.0
    stability: float = 30.0
    provenance: str = "direct_ingestion"
    source_episodes: list[str] = field(default_factory=list)
    source_times: list[float] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    access_times: list[float] = field(default_factory=list)
    valid_from: float = 0.0
    valid_to: float | None = None
    recorded_at: float = 0.0
    last_updated: float = 0.0
    superseded_by: str | None = None
    lineage: str = ""
    subject: str | None = None
    relation: str | None = None
    object: str | None = None
    polarity: bool = True
    id: str = field(default_factory=new_id)
    embedding: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def current(self) -> bool:
        return self.valid_to is None

    def valid_at(self, ts: float) -> bool:
        return self.valid_from <= ts and (self.valid_to is None or ts < self.valid_to)

    def embed_text(self) -> str:
        """What the vector is made of: `name: content` (the spec), or the content when unnamed."""
        return f"{self.name}: {self.content}" if self.name and self.name_norm not in self.content.lower() else self.content

    def to_dict(self) -> dict[str, Any]:
        """Everything but the vector, JSON-safe (tuples become lists)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "embedding"}
        out["truth"] = list(self.truth) if self.truth else None
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], embedding: np.ndarray | None = None) -> SemanticRecord:
        kwargs = {k: v for k, v in data.items() if k in _FIELDS}
        if kwargs.get("truth") is not None:
            kwargs["truth"] = tuple(kwargs["truth"])
        return cls(**kwargs, embedding=embedding)


_FIELDS = frozenset(f.name for f in fields(SemanticRecord)) - {"embedding"}


@dataclass
class Edge:
    """A typed, weighted link; `dst_layer` other than "semantic" makes it a cross-layer edge."""

    src: str
    dst: str
    type: str
    weight: float = 0.1
    co_access: int = 0
    last_co_access: float | None = None
    created_at: float = 0.0
    src_layer: str = "semantic"
    dst_layer: str = "semantic"

    def key(self) -> tuple[str, str, str]:
        return (self.src, self.dst, self.type)

    def other(self, node: str) -> str:
        return self.dst if node == self.src else self.src


@dataclass
class LearnResult:
    """What a write did, so callers (skills, the dream phase) can report it precisely."""

    id: str
    action: str  # created | reinforced | merged | superseded
    superseded: list[str] = field(default_factory=list)
    similarity: float | None = None
    duplicate: bool = False  # True when a replay of an already-counted confirmation changed nothing


@dataclass
class RecallResult:
    """One hit: the record (or a bare id in another layer), its score and, on request, the parts."""

    id: str
    score: float
    record: SemanticRecord | None = None
    layer: str = "semantic"
    provenance: list[str] = field(default_factory=list)
    parts: dict[str, float] | None = None
