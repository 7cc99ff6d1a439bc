"""How memory ranks: the one rank fusion and the one spreading routine (their knobs: settings.py).

Why rank fusion: BM25, vector and sentence similarities live on different scales, so lists are fused
by rank (score = sum of weight / (k + rank)), never by raw score.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .settings import DEFAULT_SETTINGS, RecallSettings

Node = tuple[str, str]  # (layer, id)
Neighbours = Callable[[str, str], list[tuple[str, str, float]]]  # (layer, id) -> [(layer, id, weight)]


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
