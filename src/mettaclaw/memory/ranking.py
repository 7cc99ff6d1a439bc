"""How memory ranks: its settings in one typed object, the one rank fusion and the one spreading routine.

Why rank fusion: BM25, vector and sentence similarities live on different scales, so lists are fused
by rank (score = sum of weight / (k + rank)), never by raw score. Why one settings object: the agent,
the benchmarks and the skills must rank alike; the defaults below are what the agent uses, and a
benchmark that changes one says which.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

Node = tuple[str, str]  # (layer, id)
Neighbours = Callable[[str, str], list[tuple[str, str, float]]]  # (layer, id) -> [(layer, id, weight)]


class ActivationWeights(BaseModel):
    """The semantic layer's score (spec, memory.md): similarity, ACT-R activation, retrievability."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    similarity: float = Field(0.4, ge=0)
    activation: float = Field(0.35, ge=0)
    retrievability: float = Field(0.25, ge=0)
    decay: float = Field(0.5, gt=0)  # ACT-R d
    spread: float = Field(1.6, ge=0)  # ACT-R S
    rrf_k: int = Field(10, ge=1)  # the semantic layer fuses only two short lists: a small k keeps rank 1 apart


class RecallSettings(BaseModel):
    """Every knob of recall. Fusion weights are per ranking: `bm25` and `vector` over the memory index,
    `sentences` (the index's candidates re-ranked by their best sentence) and `semantic` (the semantic
    layer's own ranking; its facts and summaries are also in the index, so it adds little)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rrf_k: int = Field(60, ge=1)
    bm25: float = Field(1.0, ge=0)
    vector: float = Field(0.2, ge=0)
    sentences: float = Field(0.2, ge=0)
    semantic: float = Field(0.0, ge=0)
    depth: int = Field(200, ge=1)  # candidates taken from each ranking
    sentence_pool: int = Field(200, ge=1)  # fused candidates whose sentences are compared with the query
    seeds: int = Field(10, ge=1)  # best hits spreading activation starts from
    spread_weight: float = Field(30.0, ge=0)  # activation's share, in units of the best fused score
    spread_steps: int = Field(3, ge=0)
    retention: float = Field(0.5, ge=0, le=1)
    spread_decay: float = Field(0.1, ge=0, lt=1)
    spread_threshold: float = Field(0.01, gt=0)
    adjacency_weight: float = Field(0.3, ge=0, le=1)  # link between consecutive episodes of one channel
    context_turns: int = Field(2, ge=0)  # earlier episodes of the channel indexed (words only) with an episode
    context_gap_s: float = Field(3600.0, ge=0)  # ... if no older than this before it
    floor: float | None = Field(None, ge=-1, le=1)  # relevance floor (cosine); None: the embedder's own
    activation: ActivationWeights = ActivationWeights()


DEFAULT_SETTINGS = RecallSettings()


def fuse(rankings: Mapping[str, Sequence[str]], weights: Mapping[str, float],
         k: int) -> tuple[dict[str, float], dict[str, dict[str, int]]]:
    """Weighted reciprocal-rank fusion: each id scores sum(weight / (k + rank)) over the lists it is in.
    Returns the scores and, per id, its rank in each list (the score's parts)."""
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, ids in rankings.items():
        weight = weights[name]
        for rank, item in enumerate(ids, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            ranks.setdefault(item, {})[name] = rank
    return scores, ranks


def spread(neighbours: Neighbours, seeds: Mapping[Node, float], steps: int = 3, retention: float = 0.5,
           decay: float = 0.1, threshold: float = 0.01, *, with_seeds: bool = False) -> dict[str, list[tuple[str, float]]]:
    """The spec's spreading search over any layers: each step a node keeps `retention` of its
    activation and passes the rest to its neighbours in proportion to link weight (normalised when
    the weights sum past 1), everything decays by `decay`, and nodes under `threshold` drop out.
    Returns {layer: [(id, activation), ...]}, strongest first, without the seeds unless `with_seeds`."""
    act = {node: float(v) for node, v in seeds.items() if v > 0}
    for _ in range(max(0, steps)):
        nxt: dict[Node, float] = defaultdict(float)
        for node, value in act.items():
            nxt[node] += value * retention
            links = neighbours(*node)
            total = max(1.0, sum(w for _, _, w in links))
            for layer, other, weight in links:
                nxt[(layer, other)] += value * (1.0 - retention) * weight / total
        act = {n: v * (1.0 - decay) for n, v in nxt.items() if v * (1.0 - decay) >= threshold}
    grouped: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for (layer, node), value in sorted(act.items(), key=lambda kv: -kv[1]):
        if with_seeds or (layer, node) not in seeds:
            grouped[layer].append((node, value))
    return dict(grouped)


def spread_with(neighbours: Neighbours, seeds: Mapping[Node, float], settings: RecallSettings = DEFAULT_SETTINGS,
                *, with_seeds: bool = False) -> dict[str, list[tuple[str, float]]]:
    """`spread` with the steps, retention, decay and threshold of `settings`."""
    return spread(neighbours, seeds, settings.spread_steps, settings.retention, settings.spread_decay,
                  settings.spread_threshold, with_seeds=with_seeds)
