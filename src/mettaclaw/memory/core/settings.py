"""Every knob of recall in one typed object. Why one: the agent, the benchmarks and the skills must rank
alike; the defaults below are what the agent uses, and a benchmark that changes one says which.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# The stages of a recall, in the order they run (recall/pipeline.py says what each does).
STAGES = ("candidates", "fuse", "sentences", "semantic", "speakers", "asker", "floor", "meaning", "spread",
          "statements", "dedup", "revisions")


class ActivationWeights(BaseModel):
    """The semantic layer's score: similarity, ACT-R activation, retrievability (docs/memory.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    similarity: float = Field(0.4, ge=0)
    activation: float = Field(0.35, ge=0)
    retrievability: float = Field(0.25, ge=0)
    decay: float = Field(0.5, gt=0)  # ACT-R d
    spread: float = Field(1.6, ge=0)  # ACT-R S
    # ACT-R's transient noise (logistic, scale s) and retrieval threshold tau: a record whose activation
    # falls below tau is not retrieved (it decays below tau after about two years unused, with one access);
    # the seed makes the noise repeatable from one start to the next
    noise: float = Field(0.25, ge=0)
    threshold: float = Field(-9.0)
    seed: int = 0
    rrf_k: int = Field(10, ge=1)  # the semantic layer fuses only two short lists: a small k keeps rank 1 apart


class RecallSettings(BaseModel):
    """Every knob of recall; the defaults were chosen on LoCoMo conversations 0-1 through the live agent
    (bench/locomo.py) and checked once on conversations 2-6. Fusion weights are per ranking: `bm25` and
    `vector` over the memory index, `sentences` (the index's candidates re-ranked by their best
    sentence), `semantic` (the semantic layer's own ranking; its facts and summaries are also in the
    index, so it adds little) and `speaker` (the dream's records that quote only the people a question
    names: see `recall.relevance.quoting_named`) and `asker` (what the person asking said, when the question
    is about them: `recall.relevance.said_by_asker`; only when the caller says who asks). `stages` are the
    recall's stages that run: a benchmark leaves one out to switch it off."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rrf_k: int = Field(60, ge=1)
    bm25: float = Field(1.0, ge=0)
    vector: float = Field(0.2, ge=0)
    sentences: float = Field(0.3, ge=0)
    semantic: float = Field(0.0, ge=0)
    speaker: float = Field(0.3, ge=0)
    speaker_records: int = Field(3, ge=1)  # ... at most this many (a theme costs up to 10 sentences)
    asker: float = Field(1.0, ge=0)  # what the asker said, for a question about themselves (relevance.said_by_asker)
    depth: int = Field(200, ge=1)  # candidates taken from each ranking
    sentence_pool: int = Field(200, ge=1)  # fused candidates whose sentences are compared with the query
    seeds: int = Field(10, ge=1)  # best hits spreading activation starts from
    spread_weight: float = Field(3.0, ge=0)  # activation's share, in units of the best fused score
    spread_steps: int = Field(3, ge=0)
    retention: float = Field(0.5, ge=0, le=1)
    spread_decay: float = Field(0.1, ge=0, lt=1)
    spread_threshold: float = Field(0.01, gt=0)
    adjacency_weight: float = Field(0.3, ge=0, le=1)  # link between consecutive episodes of one channel
    context_turns: int = Field(2, ge=0)  # earlier episodes of the channel indexed (words only) with an episode
    context_gap_s: float = Field(3600.0, ge=0)  # ... if no older than this before it
    floor: float | None = Field(None, ge=-1, le=1)  # relevance floor (cosine); None: the embedder's own
    activation: ActivationWeights = ActivationWeights()
    stages: tuple[str, ...] = STAGES

    @field_validator("stages", mode="before")
    @classmethod
    def _stage_names(cls, value: Any) -> Any:
        """Names as a comma-separated string too ("candidates,fuse,floor"), as a command line gives
        them; each only once, known, and in the order the stages run. `-name,...` is every stage
        but these."""
        if isinstance(value, str):
            value = [n.strip() for n in value.split(",") if n.strip()]
        if not isinstance(value, list | tuple) or not all(isinstance(n, str) for n in value):
            return value  # pydantic refuses it as a tuple of names
        without = [n.removeprefix("-") for n in value if n.startswith("-")]
        if without and len(without) < len(value):
            raise ValueError("stages are either names to run or -names to leave out, not both")
        names = tuple(n for n in STAGES if n not in without) if without else tuple(value)
        if unknown := [n for n in (without or names) if n not in STAGES]:
            raise ValueError(f"unknown recall stage {', '.join(map(repr, unknown))}; the stages are {', '.join(STAGES)}")
        if list(names) != sorted(set(names), key=STAGES.index):
            raise ValueError(f"stages run once each, in this order: {', '.join(STAGES)}")
        return names


DEFAULT_SETTINGS = RecallSettings()
