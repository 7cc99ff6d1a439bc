"""Recall across memory layers: one ranked list from long-term memories and semantic records, then
spreading activation from the best hits across layers (facts -> the episodes they cite -> the
episodes next to those -> the facts that cite them ...), results grouped by layer on request.

Why one list: the model pays for every line it reads, so raw episodes and the facts distilled from
them compete for the same few slots; a hit whose cited episodes are all covered by a better hit
adds nothing and is dropped. The per-layer scores (BM25/vector ranks for memories; similarity, ACT-R
base level, spreading and retrievability for semantic records, from `semantic/recall.py`) are kept
in `Hit.parts` when asked for.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .text import sentences

Node = tuple[str, str]  # (layer, id)
SHOWING_KINDS = ("fact", "summary")  # semantic kinds whose text restates their episodes
Neighbours = Callable[[str, str], list[tuple[str, str, float]]]


@dataclass
class Hit:
    layer: str  # longterm | semantic | episodic
    id: str
    text: str
    score: float
    cites: list[str] = field(default_factory=list)  # the episodes it came from (provenance)
    parts: dict[str, float] | None = None
    shows: bool = True  # its text carries what its episodes said (a memory, fact or summary), unlike a
    # concept's name, which merely points at them; only a hit that shows its episodes covers them

    @property
    def covers(self) -> list[str]:
        return self.cites if self.shows else []


def spread_layers(neighbours: Neighbours, seeds: dict[Node, float], steps: int = 3, retention: float = 0.5,
                  decay: float = 0.1, threshold: float = 0.01) -> dict[str, list[tuple[str, float]]]:
    """The spec's spreading search over any layers: each step a node keeps `retention` of its
    activation and passes the rest to its neighbours in proportion to link weight (normalised when
    the weights sum past 1), everything decays by `decay`, and nodes under `threshold` drop out.
    Returns {layer: [(id, activation), ...]} without the seeds, strongest first."""
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
        if (layer, node) not in seeds:
            grouped[layer].append((node, value))
    return dict(grouped)


class LayerGraph:
    """The links between layers, as a `Neighbours` function.

    semantic <-> semantic and semantic <-> episodic: the semantic store's edges (relations,
    co-occurrence, DERIVED_FROM provenance); episodic <-> episodic: adjacency in time (`adjacent`);
    episodic <-> longterm: the memory that stores an episode (`memories_of` / `episode_of`);
    longterm -> episodic/semantic: a derived memory's `cites` and `semantic_id` (the dream's mirror).
    """

    def __init__(self, semantic: Any = None, *, longterm: Any = None, adjacent: Callable[[str], list[str]] | None = None,
                 adjacency_weight: float = 0.3, memories_of: Callable[[str], list[str]] | None = None,
                 episode_of: Callable[[str], str | None] | None = None) -> None:
        self.semantic, self.longterm, self.adjacent, self.adjacency_weight = semantic, longterm, adjacent, adjacency_weight
        self.memories_of, self.episode_of = memories_of, episode_of

    def __call__(self, layer: str, node: str) -> list[tuple[str, str, float]]:
        out: list[tuple[str, str, float]] = []
        if layer in ("semantic", "episodic") and self.semantic is not None:
            for edge in self.semantic.records.edges_of(node):
                other = edge.other(node)
                out.append((edge.dst_layer if other == edge.dst else edge.src_layer, other, edge.weight))
        if layer == "episodic":
            if self.adjacent is not None:
                out.extend(("episodic", n, self.adjacency_weight) for n in self.adjacent(node))
            if self.memories_of is not None:
                out.extend(("longterm", m, 1.0) for m in self.memories_of(node))
        if layer == "longterm":
            episode = self.episode_of(node) if self.episode_of is not None else None
            if episode:
                out.append(("episodic", episode, 1.0))
            memory = self.longterm.get(node) if self.longterm is not None else None
            if memory is not None and memory.meta.get("semantic_id"):
                out.append(("semantic", str(memory.meta["semantic_id"]), 1.0))  # the record it mirrors
        return out


# Settings the agent recalls with (chosen on two LoCoMo conversations, checked on the five held out):
# semantic records contribute through spreading activation rather than by their own rank; the best
# sentence of each candidate memory ranks it once more (LoCoMo multi-hop R@10 0.519 -> 0.536 held out).
AGENT_RECALL_OPTIONS: dict[str, Any] = {"weights": {"semantic": 0.0}, "seeds": 10, "spread_weight": 30.0,
                                        "sentence_weight": 0.2}
SENTENCE_CACHE = 20_000  # memories whose sentence vectors recall keeps (about 30 MB with MiniLM)


_LABEL = re.compile(r"^([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,3}):\s")


def labelled_sentences(text: str) -> list[str]:
    """A memory's sentences, each keeping the memory's "Who: " label: a chat line's later sentences
    are still that person's ("Melanie: Yep. I'm off swimming." says Melanie swims)."""
    found = sentences(text) or [text]
    label = _LABEL.match(text)
    if label is None:
        return found
    return [s if s.startswith(label.group(0)) else label.group(0) + s for s in found]


class AgentRecall:
    """The agent's recall: long-term memories and semantic records fused by reciprocal rank, plus a
    share of spreading activation from the top hits, minus hits that add no new episodes."""

    def __init__(self, longterm: Any = None, semantic: Any = None, graph: LayerGraph | None = None, *,
                 weights: dict[str, float] | None = None, rrf_k: int = 60, seeds: int = 5,
                 spread_weight: float = 0.5, touch: bool = True, feedback: int = 0,
                 pointers: bool = False, sentence_weight: float = 0.0, sentence_pool: int = 200) -> None:
        if longterm is None and semantic is None:
            raise ValueError("recall needs at least one layer (longterm or semantic)")
        self.longterm, self.semantic, self.graph = longterm, semantic, graph or LayerGraph(semantic)
        self.weights = {"longterm": 1.0, "semantic": 1.0, **(weights or {})}
        self.rrf_k, self.seeds, self.spread_weight, self.touch = rrf_k, seeds, spread_weight, touch
        self.feedback = feedback  # > 0: ask long-term memory again with the text of that many top hits
        self.pointers = pointers  # also list hits that only point at episodes (concepts): off, they are hubs
        self.weights.setdefault("feedback", 0.5)
        # > 0: rank the pool of long-term candidates by their best sentence's similarity to the query
        # (a long turn's one relevant sentence is blurred in the whole turn's vector)
        self.weights["sentences"] = sentence_weight
        if sentence_weight < 0 or sentence_pool < 1:
            raise ValueError(f"sentence_weight {sentence_weight} must be >= 0 and sentence_pool {sentence_pool} >= 1")
        self.sentence_pool = sentence_pool
        self._sentence_vectors: dict[str, Any] = {}

    def _memory_hit(self, memory: Any, rank: int) -> Hit:
        episode = self.graph.episode_of(memory.id) if self.graph.episode_of else None
        derived = [c for c in str(memory.meta.get("cites", "")).split("|") if c]  # a mirrored dream record
        parts = {k: float(v) for k, v in memory.meta.items() if k.endswith(("_rank", "_score"))}
        return Hit("longterm", memory.id, memory.text, 0.0, derived or ([episode] if episode else []),
                   {**parts, "layer_rank": rank, "layer_score": float(memory.score)})

    def _semantic_hit(self, result: Any, rank: int) -> Hit:
        rec = result.record
        return Hit("semantic", result.id, rec.content if rec else result.id, 0.0, list(result.provenance),
                   {**(result.parts or {}), "layer_rank": rank, "layer_score": float(result.score)},
                   shows=rec is not None and rec.kind in SHOWING_KINDS)

    def recall(self, query: str, limit: int = 10, *, explain: bool = False,
               longterm_filters: dict[str, Any] | None = None) -> list[Hit]:
        if not isinstance(query, str) or not query.strip():
            raise ValueError("cannot recall with an empty query")
        if not 1 <= int(limit) <= 1000:
            raise ValueError(f"limit {limit} is outside 1..1000")
        depth = max(30, 3 * int(limit))
        lists: dict[str, list[Hit]] = {}
        if self.longterm is not None:
            sentences = self.weights["sentences"] > 0
            found = self.longterm.query(query, limit=max(depth, self.sentence_pool) if sentences else depth,
                                        **(longterm_filters or {}))
            lists["longterm"] = [self._memory_hit(m, r) for r, m in enumerate(found[:depth], start=1)]
            if sentences:
                lists["sentences"] = self._by_sentence(query, found[: self.sentence_pool])
        if self.semantic is not None and len(self.semantic):
            found = self.semantic.recall(query, depth, explain=True, touch=self.touch)
            lists["semantic"] = [self._semantic_hit(h, r) for r, h in enumerate(found, start=1)]
        if self.feedback > 0 and lists.get("longterm"):
            # pseudo-relevance feedback, the lexical twin of spreading: the words of the best hits find
            # the second hop of a question (the place named in the turn that answered "where from")
            expanded = "\n".join([query, *(h.text for h in lists["longterm"][: self.feedback])])
            found = self.longterm.query(expanded, limit=depth, **(longterm_filters or {}))
            lists["feedback"] = [self._memory_hit(m, r) for r, m in enumerate(found, start=1)]
        hits: dict[Node, Hit] = {}
        for layer, ranked in lists.items():
            for rank, hit in enumerate(ranked, start=1):
                node = ("longterm" if layer in ("feedback", "sentences") else layer, hit.id)
                hit.score = self.weights[layer] / (self.rrf_k + rank)
                if node in hits:
                    hits[node].score += hit.score
                else:
                    hits[node] = hit
        self._spread(hits)
        ordered = sorted(hits.values(), key=lambda h: -h.score)
        out, covered = [], set()
        for hit in ordered:
            if not hit.shows and not self.pointers:
                continue  # activation flowed through it; the model is shown what it points at instead
            if hit.covers and set(hit.covers) <= covered:
                continue  # everything it shows is already in a better hit
            covered.update(hit.covers)
            if explain and hit.parts is not None:
                hit.parts["score"] = hit.score
            else:
                hit.parts = None if not explain else hit.parts
            out.append(hit)
            if len(out) >= limit:
                break
        return out

    def _by_sentence(self, query: str, pool: list[Any]) -> list[Hit]:
        """The hybrid pool re-ranked by each memory's best sentence (its sentence vectors are cached)."""
        import numpy as np

        embedder = self.longterm.embedder
        vectors = {m.id: self._sentence_vectors[m.id] for m in pool if m.id in self._sentence_vectors}
        parts = [(m.id, labelled_sentences(m.text)) for m in pool if m.id not in vectors]
        flat = [s for _, sents in parts for s in sents]
        if flat:
            while self._sentence_vectors and len(self._sentence_vectors) + len(parts) > SENTENCE_CACHE:
                del self._sentence_vectors[next(iter(self._sentence_vectors))]  # the oldest first
            rows, pos = embedder.embed(flat), 0
            for mid, sents in parts:
                vectors[mid] = self._sentence_vectors[mid] = rows[pos : pos + len(sents)]
                pos += len(sents)
        q = embedder.embed([query])[0]
        best = sorted(pool, key=lambda m: -float(np.max(vectors[m.id] @ q)))
        return [self._memory_hit(m, r) for r, m in enumerate(best, start=1)]

    def _spread(self, hits: dict[Node, Hit]) -> None:
        """Add `spread_weight` x (activation spread from the top seeds, in units of the best score)."""
        if self.spread_weight <= 0 or not hits:
            return
        top = sorted(hits.items(), key=lambda kv: -kv[1].score)[: self.seeds]
        best = top[0][1].score
        seeds = {node: hit.score / best for node, hit in top}
        for layer, found in spread_layers(self.graph, seeds).items():
            for node_id, activation in found:
                node = (layer, node_id)
                if node not in hits:
                    hit = self._resolve(layer, node_id)
                    if hit is None:
                        continue
                    hits[node] = hit
                hits[node].score += self.spread_weight * best * activation
                if hits[node].parts is not None:
                    hits[node].parts["spread"] = activation

    def _resolve(self, layer: str, node_id: str) -> Hit | None:
        """A hit for a node reached only by spreading (episodes are shown through their memory)."""
        if layer == "semantic" and self.semantic is not None:
            rec = self.semantic.get(node_id)
            if rec is not None and rec.current:
                return Hit("semantic", rec.id, rec.content, 0.0, list(rec.source_episodes), {},
                           shows=rec.kind in SHOWING_KINDS)
        if layer == "longterm" and self.longterm is not None:
            memory = self.longterm.get(node_id)
            if memory is not None:
                return self._memory_hit(memory, 0)
        return None

    def by_layer(self, hits: list[Hit]) -> dict[str, list[Hit]]:
        grouped: dict[str, list[Hit]] = defaultdict(list)
        for hit in hits:
            grouped[hit.layer].append(hit)
        return dict(grouped)


def render(hits: list[Hit], explain: bool = False) -> str:
    """Hits as the model reads them: numbered, with layer, id and the episodes they stand for."""
    lines = []
    for n, hit in enumerate(hits, start=1):
        src = f", from {', '.join(hit.cites[:5])}" if hit.cites else ""
        line = f"{n}. [{hit.layer}] {hit.text} (id {hit.id}{src})"
        if explain and hit.parts:
            line += " {" + ", ".join(f"{k}={v:.3g}" for k, v in sorted(hit.parts.items())) + "}"
        lines.append(line)
    return "\n".join(lines)


def spread_skill(semantic: Any, graph: LayerGraph, arg: str, limit: int = 5) -> str:
    """`spread <id or name>`: what one record activates in each layer."""
    ref = (arg or "").strip()
    if not ref:
        return "ERROR: spread: give a record id or name, e.g. spread coffee mug"
    try:
        rec = semantic.resolve(ref)
    except LookupError as err:
        return f"ERROR: spread: {err}"
    grouped = spread_layers(graph, {("semantic", rec.id): 1.0})
    if not grouped:
        return f"SPREAD: {rec.id} ({rec.content[:60]}) has no links yet"
    out = [f"SPREAD from {rec.id} ({rec.content[:60]}):"]
    for layer, found in grouped.items():
        shown = []
        for node, act in found[:limit]:
            other = semantic.get(node) if layer == "semantic" else None
            shown.append(f"{node}{' ' + repr(other.content[:50]) if other else ''} ({act:.2f})")
        out.append(f"  {layer}: " + "; ".join(shown))
    return "\n".join(out)
