"""Reconciliation: decide what a candidate fact does to the store before anything is written.

Order: structure first (same subject and single-valued relation -> reinforce or supersede), then
exact keys (normalised content, a concept's normalised name), then vector similarity bands guarded
by structure and by key tokens (numbers, names), so "Bob lives in Paris" never merges into "Alice
lives in Paris" however close their vectors are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.text import terms, words
from mettaclaw.memory.stores.vectors import VectorStore

from .normalize import Triple, key_tokens, same_object
from .records import INDEX_TAG, SemanticRecord
from .store import SemanticStore

NAMED_KINDS = ("concept", "theme")


@dataclass(frozen=True)
class Thresholds:
    """Cosine bands. Defaults suit all-MiniLM-L6-v2 (close paraphrases 0.75-0.95); the hash test
    embedder gets its own (bag of words: reordered words score ~1, paraphrases with new words lower)."""

    reinforce: float = 0.92
    merge: float = 0.82
    relevant: float = 0.35  # two texts are about the same thing (MiniLM: unrelated <= ~0.3): the knowledge
    # block shows no fact below it, and a dream theme keeps no sentence without a neighbour above it


THRESHOLDS_BY_EMBEDDER = {"hash": Thresholds(reinforce=0.90, merge=0.75, relevant=0.50)}


def thresholds_for(embedder_name: str) -> Thresholds:
    return THRESHOLDS_BY_EMBEDDER.get(embedder_name, Thresholds())


@dataclass
class Candidate:
    content: str
    kind: str
    name: str
    name_norm: str
    content_key: str
    triple: Triple | None
    embedding: np.ndarray
    valid_from: float
    source_episodes: list[str] = field(default_factory=list)
    scope: str = scopes.DEFAULT  # only records of the same scope can be its duplicate or its old version


@dataclass
class Decision:
    action: str  # create | reinforce | merge | supersede | historical
    targets: list[SemanticRecord] = field(default_factory=list)
    similarity: float | None = None
    reason: str = ""


def same_triple(rec: SemanticRecord, triple: Triple) -> bool:
    return (rec.subject == triple.subject and rec.relation == triple.relation and rec.polarity == triple.polarity
            and rec.object is not None and same_object(rec.object, triple.object))


def key_tokens_agree(a: str, b: str) -> bool:
    """Numbers must match exactly; a capitalised name in one text must occur (any case) in the other."""
    ka, kb = key_tokens(a), key_tokens(b)
    nums_a = {t for t in ka if t[0].isdigit()}
    nums_b = {t for t in kb if t[0].isdigit()}
    if nums_a != nums_b:
        return False
    wa, wb = set(words(a)), set(words(b))
    return all(t in wb for t in ka - nums_a) and all(t in wa for t in kb - nums_b)


def more_specific(old: str, new: str) -> str:
    """Offline merge: keep the text with more distinct content words; ties keep the old text."""
    return new if len(set(terms(new))) > len(set(terms(old))) else old


def _structural(store: SemanticStore, cand: Candidate) -> Decision | None:
    t = cand.triple
    if t is None:
        return None
    current = [r for r in store.find_by_subject(t.subject, t.relation, current_only=True)
               if scopes.of_tags(r.tags) == cand.scope]
    for rec in current:
        if same_triple(rec, t):
            action = "reinforce" if rec.object == t.object else "merge"
            return Decision(action, [rec], reason=f"same {t.relation} of {t.subject}")
    conflicting = [r for r in current if (t.functional and r.object is not None)
                   or (r.object is not None and same_object(r.object, t.object) and r.polarity != t.polarity)]
    if not conflicting:
        return None
    if all(cand.valid_from < r.valid_from for r in conflicting):
        return Decision("historical", conflicting, reason="older than the current value")
    return Decision("supersede", [r for r in conflicting if r.valid_from <= cand.valid_from],
                    reason=f"{t.subject} {t.relation} changed")


def decide(store: SemanticStore, vectors: VectorStore, cand: Candidate, th: Thresholds) -> Decision:
    """What writing `cand` should do; reads only."""
    found = _structural(store, cand)
    if found is not None:
        return found
    for rec in store.find_by_key(content_key=cand.content_key, current_only=True):
        # a content of no word ("?", "🎉", "the") has the empty key, which every such record shares: only
        # the same text is the same fact (`learn ❤️` was "reinforced" into `learn 🎉🎉` and lost)
        if not cand.content_key and rec.content != cand.content:
            continue
        if cand.kind in NAMED_KINDS and cand.name_norm and rec.name_norm and rec.name_norm != cand.name_norm:
            continue  # two named concepts are the same only by name: `concept dog: an animal` reinforced cat
        if rec.kind == cand.kind and INDEX_TAG not in rec.tags and scopes.of_tags(rec.tags) == cand.scope:
            return Decision("reinforce", [rec], 1.0, reason="same normalised content")
    if cand.kind in NAMED_KINDS and cand.name_norm:
        for rec in store.find_by_key(name_norm=cand.name_norm, current_only=True):
            if rec.kind == cand.kind and scopes.of_tags(rec.tags) == cand.scope:
                return Decision("merge", [rec], None, reason="same concept name")
    hits = vectors.query(cand.embedding, k=8, bare=True)
    if not hits:
        return Decision("create")
    by_id = {r.id: r for r in store.get_many([item.id for item, _ in hits])}
    for item, sim in hits:
        rec = by_id.get(item.id)
        if (rec is None or not rec.current or rec.kind != cand.kind or sim < th.merge or INDEX_TAG in rec.tags
                or scopes.of_tags(rec.tags) != cand.scope):
            continue  # (an index over episodes is nobody's duplicate: it only shows what its episodes said)
        if cand.triple is not None and rec.subject is not None and not same_triple(rec, cand.triple):
            continue  # both are structured and say different things: distinct facts, however close
        if cand.kind in NAMED_KINDS and cand.name_norm and rec.name_norm and rec.name_norm != cand.name_norm:
            continue  # two named concepts are the same only by name
        if not key_tokens_agree(rec.content, cand.content):
            continue
        return Decision("reinforce" if sim >= th.reinforce else "merge", [rec], sim, reason=f"cosine {sim:.2f}")
    return Decision("create", similarity=max(s for _, s in hits))
