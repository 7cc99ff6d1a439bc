"""Retrieval: candidate gathering per mode, and the spec's score with its parts.

score = 0.4 * similarity + 0.35 * sigmoid(activation) + 0.25 * retrievability, where similarity is the
reciprocal-rank fusion of vector and BM25 ranks (scaled so rank 1 in both is 1), activation is the
ACT-R base level plus spreading from context records, and retrievability is the FSRS-style curve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mettaclaw.vectorstore import VectorStore

from .graph import DAY, spreading_activation
from .records import SemanticRecord
from .store import RecordFilter, SemanticStore, record_matches

MODES = ("semantic", "logical", "hybrid")
HYBRID_CAP = 5000


@dataclass(frozen=True)
class ScoreWeights:
    similarity: float = 0.4
    activation: float = 0.35
    retrievability: float = 0.25
    decay: float = 0.5  # ACT-R d
    spread: float = 1.6  # ACT-R S
    rrf_k: int = 10


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


def gather(store: SemanticStore, vectors: VectorStore, qvec: np.ndarray | None, query: str, mode: str,
           f: RecordFilter, limit: int) -> Candidates:
    """Semantic: nearest by vector and BM25, then the filter. Logical/hybrid: the filter first
    (exhaustive), then similarity over what passed, from the vectors stored with the records."""
    if mode == "semantic":
        pool = max(50, 5 * limit)
        while True:
            hits = vectors.query(qvec, k=pool) if qvec is not None else []
            cosine = {item.id: sim for item, sim in hits}
            bm25 = dict(store.lexical(query, pool)) if query else {}
            recs = {r.id: r for r in store.get_many(list({**cosine, **bm25})) if record_matches(r, f)}
            if len(recs) >= limit or pool >= 4000 or len(hits) < pool:
                break
            pool *= 4  # the filter or history hid too many: look further
    else:
        recs = {r.id: r for r in store.select(f, limit=HYBRID_CAP)}
        cosine, bm25 = {}, {}
        if mode == "hybrid" and qvec is not None and recs:
            with_vec = [r for r in recs.values() if r.embedding is not None and len(r.embedding) == len(qvec)]
            if with_vec:
                sims = np.stack([r.embedding for r in with_vec]) @ np.asarray(qvec, dtype=np.float32)
                cosine = {r.id: float(s) for r, s in zip(with_vec, sims, strict=True)}
            bm25 = {i: s for i, s in store.lexical(query, max(200, 4 * len(recs))) if i in recs}
    return Candidates(recs, {i: s for i, s in cosine.items() if i in recs}, _ranks({i: s for i, s in cosine.items() if i in recs}),
                      {i: s for i, s in bm25.items() if i in recs}, _ranks({i: s for i, s in bm25.items() if i in recs}))


def score(c: Candidates, store: SemanticStore, now: float, context: list[str], w: ScoreWeights,
          use_similarity: bool) -> list[tuple[SemanticRecord, float, dict[str, float]]]:
    spread = spreading_activation(store, context, set(c.records), w.spread) if context else {}
    best = 2.0 / (w.rrf_k + 1)
    out = []
    for rid, rec in c.records.items():
        rrf = 0.0
        if rid in c.vec_rank:
            rrf += 1.0 / (w.rrf_k + c.vec_rank[rid])
        if rid in c.lex_rank:
            rrf += 1.0 / (w.rrf_k + c.lex_rank[rid])
        similarity = rrf / best if use_similarity else 0.0
        times = accesses(rec)
        b = base_level(times, now, w.decay)
        activation = b + spread.get(rid, 0.0)
        r = retrievability(max(times), rec.stability, now)
        total = w.similarity * similarity + w.activation * sigmoid(activation) + w.retrievability * r
        parts = {"similarity": similarity, "cosine": c.cosine.get(rid, 0.0), "bm25": c.bm25.get(rid, 0.0),
                 "base_level": b, "spreading": spread.get(rid, 0.0), "activation": activation,
                 "retrievability": r, "score": total}
        out.append((rec, total, parts))
    out.sort(key=lambda t: -t[1])
    return out
