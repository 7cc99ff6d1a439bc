"""How memory ranks: its settings in one typed object, the one rank fusion and the one spreading routine.

Why rank fusion: BM25, vector and sentence similarities live on different scales, so lists are fused
by rank (score = sum of weight / (k + rank)), never by raw score. Why one settings object: the agent,
the benchmarks and the skills must rank alike; the defaults below are what the agent uses, and a
benchmark that changes one says which.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

import numpy as np
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
    names: see `Recall._quoting_named`) and `asker` (what the person asking said, when the question
    is about them: `Recall._said_by_asker`; only when the caller says who asks)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rrf_k: int = Field(60, ge=1)
    bm25: float = Field(1.0, ge=0)
    vector: float = Field(0.2, ge=0)
    sentences: float = Field(0.3, ge=0)
    semantic: float = Field(0.0, ge=0)
    speaker: float = Field(0.3, ge=0)
    speaker_records: int = Field(3, ge=1)  # ... at most this many (a theme costs up to 10 sentences)
    asker: float = Field(1.0, ge=0)  # what the asker said, for a question about themselves (Recall._said_by_asker)
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


def activation(neighbours: Neighbours, seeds: Sequence[tuple[Node, float]], steps: int = 3, retention: float = 0.5,
               decay: float = 0.1, threshold: float = 0.01) -> tuple[list[Node], np.ndarray]:
    """The spec's spreading search, from each seed on its own and all at once: each step a node keeps
    `retention` of its activation and passes the rest to its neighbours in proportion to link weight
    (normalised when the weights sum past 1), everything decays by `decay`, and activation under
    `threshold` drops out. Returns the nodes reached and their activation, one column per seed (what
    started there), so a caller can tell support from others from a node's own activation coming back.
    Each node's links are asked for once, however many seeds reach it."""
    nodes: list[Node] = []
    index: dict[Node, int] = {}

    def node_index(node: Node) -> int:
        if node not in index:
            index[node] = len(nodes)
            nodes.append(node)
        return index[node]

    for node, _ in seeds:
        node_index(node)
    act = np.zeros((len(nodes), len(seeds)))
    for col, (node, value) in enumerate(seeds):
        act[index[node], col] = max(0.0, float(value))
    src: list[int] = []
    dst: list[int] = []
    share: list[float] = []
    expanded: set[int] = set()
    for _ in range(max(0, steps)):
        for i in np.flatnonzero(act.max(axis=1) > 0):
            if i in expanded:
                continue
            expanded.add(int(i))
            links = neighbours(*nodes[i])
            total = max(1.0, sum(w for _, _, w in links))
            for layer, other, weight in links:
                src.append(int(i))
                dst.append(node_index((layer, other)))
                share.append((1.0 - retention) * weight / total)
        grown = np.zeros((len(nodes), len(seeds)))
        grown[: act.shape[0]] = act
        nxt = retention * grown
        if src:
            np.add.at(nxt, np.asarray(dst), np.asarray(share)[:, None] * grown[np.asarray(src)])
        act = nxt * (1.0 - decay)
        act[act < threshold] = 0.0
    return nodes, act


def spread(neighbours: Neighbours, seeds: Mapping[Node, float], steps: int = 3, retention: float = 0.5,
           decay: float = 0.1, threshold: float = 0.01, *, with_seeds: bool = False) -> dict[str, list[tuple[str, float]]]:
    """`activation` summed over the seeds: {layer: [(id, activation), ...]}, strongest first, without
    the seeds unless `with_seeds`."""
    nodes, act = activation(neighbours, list(seeds.items()), steps, retention, decay, threshold)
    total = act.sum(axis=1)
    grouped: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for i in np.argsort(-total, kind="stable"):
        if total[i] > 0 and (with_seeds or nodes[i] not in seeds):
            grouped[nodes[i][0]].append((nodes[i][1], float(total[i])))
    return dict(grouped)


def spread_with(neighbours: Neighbours, seeds: Mapping[Node, float], settings: RecallSettings = DEFAULT_SETTINGS,
                *, with_seeds: bool = False) -> dict[str, list[tuple[str, float]]]:
    """`spread` with the steps, retention, decay and threshold of `settings`."""
    return spread(neighbours, seeds, settings.spread_steps, settings.retention, settings.spread_decay,
                  settings.spread_threshold, with_seeds=with_seeds)


def support(neighbours: Neighbours, seeds: Mapping[Node, float],
            settings: RecallSettings = DEFAULT_SETTINGS) -> dict[Node, float]:
    """What each node received from the seeds other than itself: a seed's own activation coming back
    (through its concepts, say) is not support."""
    order = list(seeds.items())
    nodes, act = activation(neighbours, order, settings.spread_steps, settings.retention, settings.spread_decay,
                            settings.spread_threshold)
    gains = act.sum(axis=1)
    seeds_at = np.arange(len(order))  # the seeds are the first nodes, in seed order
    gains[seeds_at] -= act[seeds_at, seeds_at]
    return {nodes[i]: float(gains[i]) for i in np.flatnonzero(gains > 0)}
