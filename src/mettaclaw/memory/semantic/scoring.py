"""How the semantic layer scores what `recall` finds: candidate gathering per mode, and the spec's
score with its parts.

score = 0.4 * similarity + 0.35 * sigmoid(activation) + 0.25 * retrievability, where similarity is the
reciprocal-rank fusion (ranking.fuse) of vector and BM25 ranks (scaled so rank 1 in both is 1), activation is the
ACT-R base level plus the associative strength from context records (graph.associative_strength) plus
transient noise, and retrievability is the
FSRS-style curve. As in ACT-R, a record whose activation is below the threshold tau is not retrieved;
its retrieval probability 1 / (1 + e^((tau - A) / s)) is one of the score parts.
"""

from __future__ import annotations

import itertools
import math
import threading
from dataclasses import dataclass

import numpy as np

from mettaclaw.memory.core.ranking import fuse
from mettaclaw.memory.core.settings import ActivationWeights
from mettaclaw.memory.stores.vectors import VectorStore

from .graph import DAY, associative_strength, hebbian
from .records import SemanticRecord
from .store import RecordFilter, SemanticStore

MODES = ("semantic", "logical", "hybrid")
HYBRID_CAP = 1000  # above this a filter is broad: ANN, then the filter, finds enough (widening if not)


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


def base_level(access_times: list[float], now: float, d: float = 0.5) -> float:
    """B = ln sum t_j^-d over seconds since each access (at least 1 s, so a fresh access is finite)."""
    if not access_times:
        return -10.0
    return math.log(sum(max(1.0, now - t) ** -d for t in access_times))


def retrievability(last_access: float, stability_days: float, now: float) -> float:
    """R = (1 + t / (9 S))^-1 with t in days: 0.9 after S days without use."""
    t = max(0.0, now - last_access) / DAY
    return 1.0 / (1.0 + t / (9.0 * max(stability_days, 1e-6)))


def accesses(rec: SemanticRecord) -> list[float]:
    """Storing a record is its first access; recalls add the rest."""
    return [rec.recorded_at, *rec.access_times]


@dataclass
class Candidates:
    records: dict[str, SemanticRecord]
    cosine: dict[str, float]
    vec_rank: dict[str, int]
    bm25: dict[str, float]
    lex_rank: dict[str, int]


def _ranks(scores: dict[str, float]) -> dict[str, int]:
    return {i: r for r, (i, _) in enumerate(sorted(scores.items(), key=lambda kv: -kv[1]), start=1)}


def _nearest(store: SemanticStore, vectors: VectorStore, qvec: np.ndarray | None, query: str, f: RecordFilter,
             limit: int) -> tuple[dict[str, SemanticRecord], dict[str, float], dict[str, float]]:
    """ANN and BM25 candidates, then the filter; the pool widens when the filter hid too many."""
    pool = max(50, 5 * limit)
    validity = RecordFilter(as_of=f.as_of, include_history=f.include_history)
    while True:
        hits = vectors.query(qvec, k=pool, bare=True) if qvec is not None else []
        cosine = {item.id: sim for item, sim in hits}
        bm25 = dict(store.lexical(query, pool, validity)) if query else {}
        passing = store.filter_ids(list({**cosine, **bm25}), f)  # by primary key: no record decoded
        bm25 = {i: s for i, s in bm25.items() if i in passing}
        if len(passing) >= limit or pool >= 800 or len(hits) < pool:
            best = sorted(passing, key=lambda i: -cosine.get(i, -1.0))[: max(50, 5 * limit)]
            return {r.id: r for r in store.get_many(list(set(best) | set(bm25)))}, cosine, bm25
        pool *= 4


def _filtered(store: SemanticStore, qvec: np.ndarray | None, query: str, f: RecordFilter, limit: int,
              ) -> tuple[dict[str, SemanticRecord], dict[str, float], dict[str, float]] | None:
    """Exhaustive over the filtered set (exact cosine from stored vectors); None when it is too big."""
    pool = max(50, 5 * limit)
    if not query:  # a logical listing: the newest records passing the filter, ranked by use afterwards
        return {r.id: r for r in store.select(f, limit=pool)}, {}, {}
    ids, matrix = store.select_vectors(f, limit=HYBRID_CAP + 1)
    if len(ids) > HYBRID_CAP:
        return None
    cosine: dict[str, float] = {}
    if ids and qvec is not None and matrix.shape[1] == len(qvec):
        sims = matrix @ np.asarray(qvec, dtype=np.float32)
        top = np.argpartition(-sims, min(pool, len(ids)) - 1)[:pool] if len(ids) > pool else np.arange(len(ids))
        cosine = {ids[j]: float(sims[j]) for j in top}
    bm25 = dict(store.lexical(query, pool, f))
    return {r.id: r for r in store.get_many(list(set(cosine) | set(bm25)))}, cosine, bm25


def gather(store: SemanticStore, vectors: VectorStore, qvec: np.ndarray | None, query: str, mode: str,
           f: RecordFilter, limit: int) -> Candidates:
    """Semantic: nearest by vector and BM25, then the filter. Logical/hybrid: the filter first
    (exhaustive up to HYBRID_CAP records, from the vectors stored with the records), then ranking."""
    found = None if mode == "semantic" else _filtered(store, qvec if mode == "hybrid" else None,
                                                       query if mode == "hybrid" else "", f, limit)
    if found is None:
        found = _nearest(store, vectors, qvec, query, f, limit)
    recs, cosine, bm25 = found
    cosine = {i: s for i, s in cosine.items() if i in recs}
    bm25 = {i: s for i, s in bm25.items() if i in recs}
    return Candidates(recs, cosine, _ranks(cosine), bm25, _ranks(bm25))


def act_r_noise(rng: np.random.Generator, s: float, n: int) -> np.ndarray:
    """ACT-R's transient noise: logistic with scale s, one draw per candidate and retrieval."""
    return rng.logistic(0.0, s, n) if s > 0 else np.zeros(n)


def retrieval_probability(activation: float, w: ActivationWeights) -> float:
    if w.noise <= 0:
        return 1.0 if activation >= w.threshold else 0.0
    return sigmoid((activation - w.threshold) / w.noise)


def score(c: Candidates, store: SemanticStore, now: float, context: list[str], w: ActivationWeights,
          use_similarity: bool, rng: np.random.Generator, retrieving: bool = True,
          ) -> list[tuple[SemanticRecord, float, dict[str, float]]]:
    """Every candidate scored with its parts, best first. When `retrieving`, activation carries noise and
    records below tau are left out; a listing by filter or a look at the past asks for records, not
    retrieval, and gets neither."""
    spread = associative_strength(store, context, set(c.records), w.spread) if context else {}
    noise = act_r_noise(rng, w.noise if retrieving else 0.0, len(c.records))
    by_rank = {name: sorted(ranks, key=ranks.__getitem__) for name, ranks in (("vector", c.vec_rank), ("bm25", c.lex_rank))}
    fused, _ = fuse(by_rank, {"vector": 1.0, "bm25": 1.0}, w.rrf_k)
    best = 2.0 / (w.rrf_k + 1)  # rank 1 in both lists: similarity 1
    out = []
    for (rid, rec), eps in zip(sorted(c.records.items()), noise, strict=True):  # by id: the same draw each time
        similarity = fused.get(rid, 0.0) / best if use_similarity else 0.0
        times = accesses(rec)
        b = base_level(times, now, w.decay)
        activation = b + spread.get(rid, 0.0) + float(eps)
        if retrieving and activation < w.threshold:
            continue
        r = retrievability(max(times), rec.stability, now)
        total = w.similarity * similarity + w.activation * sigmoid(activation) + w.retrievability * r
        parts = {"similarity": similarity, "cosine": c.cosine.get(rid, 0.0), "bm25": c.bm25.get(rid, 0.0),
                 "base_level": b, "spreading": spread.get(rid, 0.0), "noise": float(eps),
                 "activation": activation, "retrieval_probability": retrieval_probability(activation, w),
                 "retrievability": r, "score": total}
        out.append((rec, total, parts))
    out.sort(key=lambda t: -t[1])
    return out


@dataclass(frozen=True)
class Touch:
    """A read's use of records, noted to be written later (`apply_touches`): their ids, best first,
    the time of the read, and whether only a current version counts (a recall with history may use
    closed ones)."""

    ids: tuple[str, ...]
    at: float
    current_only: bool = True


class Touches:
    """The touches reads noted that no writer has applied yet, in the order the reads made them.

    Why a queue: a read that wrote (stability, strength, Hebbian edges) made every `query` a write
    to the semantic store; reads note what they used, and whoever writes next applies it first
    (SemanticMemory before each of its writes, Memory at the end of a turn and at close), so the
    uses count as they did, in the same order among the writes."""

    def __init__(self) -> None:
        self._pending: list[Touch] = []
        self._lock = threading.Lock()  # a read under another lock than the writer's may note one

    def note(self, ids: list[str], at: float, current_only: bool = True) -> None:
        if ids:
            with self._lock:
                self._pending.append(Touch(tuple(ids), at, current_only))

    def take(self) -> list[Touch]:
        with self._lock:
            taken, self._pending = self._pending, []
        return taken

    def put_back(self, touches: list[Touch]) -> None:
        """Touches a failed write did not apply, ahead of any noted since."""
        with self._lock:
            self._pending[:0] = touches

    def __len__(self) -> int:
        return len(self._pending)


def apply_touches(store: SemanticStore, touches: Touches) -> int:
    """Write the noted touches in one transaction, each as `touch` writes a use at the time of its
    read, its records read again by id (a record deleted since is skipped; so is one no longer current,
    where the read counted current versions only). How many were applied; on a failed write they stay
    queued."""
    taken = touches.take()
    if not taken:
        return 0
    try:
        with store.transaction():
            for t in taken:
                recs = [r for r in store.get_many(list(t.ids)) if r.current or not t.current_only]
                if recs:
                    touch(store, recs, t.at)
    except BaseException:
        touches.put_back(taken)
        raise
    return len(taken)


def touch(store: SemanticStore, recs: list[SemanticRecord], now: float, hebbian_top: int = 5,
          max_access_times: int = 50) -> None:
    """Use makes memory: an access time, stability grown by the spacing effect (more when recalled
    after a long gap), strength, and Hebbian strengthening of edges among the top results. A
    writer's step (`apply_touches`): reads only note their touches."""
    with store.transaction():
        for rec in recs:
            r = retrievability(max([rec.recorded_at, *rec.access_times]), rec.stability, now)
            rec.stability = min(3650.0, rec.stability * (1.0 + (1.0 - r)))
            rec.strength = hebbian(rec.strength)
            rec.access_times = [*rec.access_times, now][-max_access_times:]
            store.put(rec, reindex=False)
        ids = [r.id for r in recs[:hebbian_top]]
        seen = set()
        for a, b in itertools.combinations(ids, 2):
            for edge in store.edges_of(a):
                if edge.other(a) == b and edge.key() not in seen:
                    seen.add(edge.key())
                    edge.weight, edge.co_access, edge.last_co_access = hebbian(edge.weight), edge.co_access + 1, now
                    store.put_edge(edge)
