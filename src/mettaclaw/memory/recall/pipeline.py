"""The agent's recall: one ranked list from everything it remembers, what `query`, the benchmarks and
the memory service all call, made by a declared list of named stages (`RecallSettings.stages`).

The memory index holds episodes (what was said and done, indexed as it happened), remembered
memories, knowledge priors and the dream's facts, summaries and themes (mirrored from semantic
memory). The stages, each a function `(Candidates, Query) -> Candidates`, in order:

    candidates  the index's BM25 and vector rankings, each row a typed `Candidate`
    fuse        one score from the rankings (weighted reciprocal rank, `ranking.fuse`); every later
                ranking is fused in as it is added
    sentences   the best candidates' best sentences measured and, weighted, ranked (relevance.py)
    semantic    weighted, the semantic layer's own ranking (its records are also in the index)
    speakers    weighted, the dream's records quoting only the people the question names
    asker       weighted, what the person asking said, for a question about themselves
    floor       only what is related to the question contends (best sentence or whole-text cosine,
                or the hit holds the query's words)
    meaning     as far as the question's words find nothing (the share of them the best BM25 hits
                hold: a question in other words than the answer), closeness in meaning decides
    spread      spreading activation from the best hits across the links between layers (episodes
                next to each other, facts and the episodes they came from); what only it reaches
                faces the same floor
    statements  what was said above the dream records made of it, answers above questions
    dedup       the shown list: no pointers, no repeats, no hit whose episodes a better one shows
    revisions   a revision shown just above the earlier statement it revises (present.py)

Each stage is a few lines here, over the typed candidates (candidates.py); what they measure and
decide is in relevance.py (how close, and whose words) and present.py (what is shown). A
benchmark switches a stage off by leaving it out. Recall only reads: the uses it makes of semantic
records are the caller's to note (Memory.query queues them; the writer applies them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.ranking import Neighbours, support
from mettaclaw.memory.core.settings import DEFAULT_SETTINGS, STAGES, RecallSettings
from mettaclaw.memory.core.tags import row_tags
from mettaclaw.memory.core.text import LONG_TEXT, asks_about_asker, check_query, long_passages, query_terms

from .candidates import Candidate, Candidates, RecallIndex, RecallSemantic
from .present import Hit, dedup, hit_of, latest_first, normalised, shown_hits, statements_first
from .relevance import (
    WORD_EVIDENCE_HITS,
    QueryVector,
    best_sentences,
    closeness,
    floor_for,
    query_vector,
    quoting_named,
    relevance,
    relevant_records,
    rerank_without_names,
    said_by_asker,
    word_evidence,
)

if TYPE_CHECKING:
    from mettaclaw.memory.semantic.records import SemanticRecord

# Layers a `query episodic:` / `query semantic:` looks in, by the index rows' kinds.
LAYER_KINDS = {"episodic": ("episode", "memory", "belief", "prior"), "semantic": ("derived",)}


@dataclass(frozen=True)
class Query:
    """One recall's question, who asks and where, and what its stages read: the `index`, the
    `semantic` layer, the `graph` spreading walks (for a reader of `visible` scopes, only the nodes
    they may see), the `settings`, the relevance `floor` and the `stages` that run."""

    text: str
    limit: int
    vector: QueryVector
    wanted: frozenset[str]  # its content terms (text.query_terms): what a hit's own words may hold
    known: frozenset[str]  # the senders the index knows: the names a "Who: " label is read as
    index: RecallIndex
    settings: RecallSettings
    floor: float
    stages: tuple[str, ...]
    graph: Neighbours
    semantic: RecallSemantic | None = None
    mode: str = "hybrid"
    layer: str | None = None
    visible: frozenset[str] | None = None
    tags: tuple[str, ...] = ()
    since: str | None = None
    asker: str | None = None
    allowed: set[str] | None = None


Stage = Callable[[Candidates, Query], Candidates]


class LayerGraph:
    """The links between layers, as a `ranking.Neighbours` function over (layer, id) nodes.

    semantic <-> semantic and semantic <-> episodic: the semantic store's edges (relations,
    co-occurrence, DERIVED_FROM provenance); episodic <-> episodic: consecutive turns of a channel
    (`adjacent`, weighted `adjacency_weight`).
    """

    def __init__(self, semantic: RecallSemantic | None = None, adjacent: Callable[[str], list[str]] | None = None,
                 adjacency_weight: float = DEFAULT_SETTINGS.adjacency_weight) -> None:
        self.semantic, self.adjacent, self.adjacency_weight = semantic, adjacent, adjacency_weight

    def __call__(self, layer: str, node: str) -> list[tuple[str, str, float]]:
        out: list[tuple[str, str, float]] = []
        if layer in ("semantic", "episodic", "statistics") and self.semantic is not None:
            out.extend(self.semantic.records.links_of(node))
        if layer == "episodic" and self.adjacent is not None:
            out.extend(("episodic", n, self.adjacency_weight) for n in self.adjacent(node))
        return out

    def within(self, allowed: Callable[[str], bool]) -> Callable[[str, str], list[tuple[str, str, float]]]:
        """These links without the nodes `allowed` refuses (each node asked once): what spreading
        walks for a reader of some scopes only, so no activation flows through another user's
        records and another user's memories cannot change how this reader's are ranked."""
        seen: dict[str, bool] = {}

        def links(layer: str, node: str) -> list[tuple[str, str, float]]:
            out = []
            for link in self(layer, node):
                if link[1] not in seen:
                    seen[link[1]] = allowed(link[1])
                if seen[link[1]]:
                    out.append(link)
            return out

        return links


# --- the stages, in the order they run
def gather(cands: Candidates, q: Query) -> Candidates:
    """candidates: the index's rankings (BM25 and vector, as the mode asks) over the rows the filters
    allow, each row a candidate; a question naming people who spoke has its vector ranking ordered
    without their names (`relevance.judge`)."""
    s = q.settings
    raw = q.index.rankings(q.text, max(s.depth, 3 * q.limit), q.mode, q.allowed, vector=q.vector.vector) \
        if len(q.index) else {}
    if raw.get("bm25"):
        raw["bm25"] = by_best_passage(raw["bm25"], cands, q)
    lists = {name: [c.key for row_id, _ in hits if (c := cands.row(row_id)) is not None] for name, hits in raw.items()}
    cosine = {c.key: score for row_id, score in raw.get("vector", []) if (c := cands.row(row_id)) is not None}
    if q.vector.basis is not None and lists.get("vector"):
        lists["vector"], cosine = rerank_without_names(q.vector, [(k, cosine[k]) for k in lists["vector"]], cands,
                                                       q.known)
    for key, score in cosine.items():
        cands.seen[key].cosine = score
    for name, keys in lists.items():
        cands.rank(name, keys)
    return cands


def by_best_passage(hits: list[tuple[str, float]], cands: Candidates, q: Query) -> list[tuple[str, float]]:
    """The BM25 ranking with each long row (text.LONG_TEXT) scored by its best passage, as if the
    passage were a row of its own. Why: a text of thousands of characters holds many of any
    question's words somewhere, and BM25's length norm does not undo it: pasted rules and notes
    came first for questions about one line of chat."""
    out = []
    for row_id, score in hits:
        c = cands.row(row_id)
        if c is not None and len(c.text) > LONG_TEXT:
            score = max(q.index.lexical_scores(q.text, list(long_passages(c.text, q.known))), default=0.0)
        out.append((row_id, score))
    return sorted(out, key=lambda hit: -hit[1])


def fuse_rankings(cands: Candidates, q: Query) -> Candidates:
    """fuse: each candidate's score, the weighted reciprocal-rank fusion of the rankings (and of every
    ranking a later stage adds). Without it every score is 0: the candidates keep the order found,
    and spreading, in units of the best score, adds nothing."""
    s = q.settings
    cands.fuse({"vector": s.vector, "bm25": s.bm25, "sentences": s.sentences, "semantic": s.semantic,
                "speaker": s.speaker, "asker": s.asker}, s.rrf_k)
    return cands


def rank_by_sentences(cands: Candidates, q: Query) -> Candidates:
    """sentences: the best `sentence_pool` candidates' best sentences measured (what the floor and the
    asker read), and, weighted, ranked by them."""
    floor, ranked = best_sentences(q.vector, cands.best()[: q.settings.sentence_pool], cands, q.known)
    for key, cosine in floor.items():
        cands.seen[key].sentence = cosine
    cands.measured = list(floor)
    if q.settings.sentences > 0:
        cands.rank("sentences", sorted(ranked, key=lambda k: -ranked[k]))
    return cands


def rank_semantic(cands: Candidates, q: Query) -> Candidates:
    """semantic: weighted, the semantic layer's own ranking (similarity, ACT-R activation,
    retrievability), not for a question about episodes only."""
    semantic = q.semantic
    if q.settings.semantic > 0 and semantic is not None and q.layer != "episodic" and len(semantic):
        found = semantic.recall(q.text, max(30, 3 * q.limit), explain=True, touch=False, visible=q.visible,
                                tags_all=q.tags, time_from=q.since)
        cands.rank("semantic", [cands.record(r.record).key for r in found if r.record is not None])
    return cands


def lift_named(cands: Candidates, q: Query) -> Candidates:
    """speakers: weighted, the dream's records that quote only the people the question names."""
    s = q.settings
    if s.speaker > 0 and (quoting := quoting_named(cands, q.wanted, q.known, s.speaker_records)):
        cands.rank("speaker", quoting)
    return cands


def lift_askers_own(cands: Candidates, q: Query) -> Candidates:
    """asker: weighted, what the person asking said, for a question about themselves (only when the
    caller says who asks)."""
    if q.asker and q.settings.asker > 0 and asks_about_asker(q.text) and \
            (mine := said_by_asker(cands, q.wanted, q.known, q.floor, q.asker)):
        cands.rank("asker", mine)
    return cands


def hold_to_floor(cands: Candidates, q: Query) -> Candidates:
    """floor: only the candidates at or above the relevance floor contend (and what spreading finds
    later faces the same floor): whether a ranking or spreading found it, nothing unrelated is shown.
    They keep the order found, so hits of one score are shown in that order, run after run."""
    relevance(q.wanted, cands.contending.values(), q.floor, q.known)
    cands.contending = {k: c for k, c in cands.contending.items() if c.relevance is not None and c.relevance >= q.floor}
    cands.floor = q.floor
    return cands


def follow_meaning(cands: Candidates, q: Query) -> Candidates:
    """meaning: each contending score times 1 - (1 - its closeness) x (1 - word evidence), where its
    closeness is its cosine above the floor over the best one's, and the word evidence how much of the
    question the best BM25 hits' own words hold (`relevance.word_evidence`).

    Why: fusion counts ranks, and near the top the ranks of meaning barely differ (1/61 against
    1/64), so a line that shares one word of a reworded question ("sorry, visiting family") beat the
    answer ("we came home with a beagle pup, the kids named her Biscuit") that no word finds and that
    is twice as close in meaning. When the words do find the question, nothing changes."""
    bm25 = cands.rankings.get("bm25", [])[:WORD_EVIDENCE_HITS]
    # a long text by its passages: one of thousands of characters holds most of any question's words
    said = (part for k in bm25 for part in long_parts(cands.seen[k].text, q.known))
    evidence = word_evidence(q.wanted, q.known, said) if bm25 else 0.0
    near = {k: v for k, c in cands.contending.items() if (v := closeness(c)) is not None}
    best = max(near.values(), default=q.floor)
    if evidence >= 1.0 or best <= q.floor:
        return cands
    for key, c in cands.contending.items():
        close = min(1.0, max(0.0, (near.get(key, q.floor) - q.floor) / (best - q.floor)))
        c.score *= 1.0 - (1.0 - close) * (1.0 - evidence)
    return cands


def long_parts(text: str, known: frozenset[str]) -> tuple[str, ...]:
    """A text as words are counted in it: a long one (text.LONG_TEXT) passage by passage, else whole."""
    return long_passages(text, known) if len(text) > LONG_TEXT else (text,)


def spread(cands: Candidates, q: Query) -> Candidates:
    """spread: add `spread_weight` x (activation each node received from the other top seeds, in
    units of the best score; `ranking.support`). What a hit gets back of its own activation is no
    gain, so a hit with no links loses nothing to one that has them. A node only spreading reached
    contends from nothing, held to the floor the floor stage set, its sentences measured as the
    pool's were."""
    s = q.settings
    top: list[Candidate] = []
    said: set[str] = set()
    for c in cands.best():
        if len(top) < s.seeds and (text := normalised(c.text)) not in said:  # copies of one statement are one seed
            said.add(text)
            top.append(c)
    best = top[0].score if top else 0.0
    if s.spread_weight <= 0 or best <= 0:
        return cands
    gains = support(q.graph, {(c.layer, c.key): c.score / best for c in top}, s)
    found: list[Candidate] = []
    for (layer, node_id), gain in gains.items():
        if node_id not in cands.contending:
            node = reached(layer, node_id, cands, q)
            if node is None:
                continue
            node.score = 0.0
            cands.contending[node_id] = node
            found.append(node)
        cands.contending[node_id].score += s.spread_weight * best * gain
        cands.contending[node_id].spread += gain
    if cands.floor is not None and found:
        if "sentences" in q.stages:
            near = best_sentences(q.vector, found, cands, q.known)[0]
            for c in found:
                c.sentence = near.get(c.key)
        relevance(q.wanted, found, cands.floor, q.known)
        # the others were held to it by the floor stage: this leaves out what spreading found below it
        cands.contending = {k: c for k, c in cands.contending.items()
                            if c.relevance is None or c.relevance >= cands.floor}
    return cands


def reached(layer: str, node_id: str, cands: Candidates, q: Query) -> Candidate | None:
    """The candidate a node reached only by spreading is (None when it is gone or in a scope not visible)."""
    if layer == "semantic" and q.semantic is not None:
        rec = q.semantic.get(node_id)
        if rec is None or not rec.current or not scopes.allows(q.visible, rec.tags):
            return None
        return cands.record(rec)
    row = q.index.row(node_id)
    if row is None or not scopes.allows(q.visible, row_tags(row.metadata)):
        return None
    return cands.row(node_id)


def said_first(cands: Candidates, q: Query) -> Candidates:
    """statements: the hits in order, what people said above the dream records made of it and answers
    above questions (present.statements_first); not for a question about the dream's records only."""
    if q.layer == "semantic":
        return cands
    cands.shown = statements_first([hit_of(c) for c in cands.best()], q.known, q.limit)
    return cands


def dedup_shown(cands: Candidates, q: Query) -> Candidates:
    """dedup: the shown list, best first, without pointers, repeats and what better hits show."""
    ordered = cands.shown if cands.shown is not None else [hit_of(c) for c in cands.best()]
    cands.shown = dedup(ordered, q.limit, q.known)
    return cands


def revisions_first(cands: Candidates, q: Query) -> Candidates:
    """revisions: each revision shown just above the earlier statement it revises."""
    cands.shown = latest_first(shown_hits(cands, q.limit), cands, q.known)
    return cands


STAGE_FUNCTIONS: dict[str, Stage] = {
    "candidates": gather, "fuse": fuse_rankings, "sentences": rank_by_sentences, "semantic": rank_semantic,
    "speakers": lift_named, "asker": lift_askers_own, "floor": hold_to_floor, "meaning": follow_meaning,
    "spread": spread, "statements": said_first,
    "dedup": dedup_shown, "revisions": revisions_first,
}
assert tuple(STAGE_FUNCTIONS) == STAGES, "every stage settings.STAGES names has its function here, in order"


class RecallPipeline:
    """The one ranker (see the module's docstring); `settings` are what the agent uses unless given."""

    def __init__(self, index: RecallIndex, semantic: RecallSemantic | None = None, graph: LayerGraph | None = None, *,
                 settings: RecallSettings = DEFAULT_SETTINGS, mode: str = "hybrid",
                 in_scopes: Callable[[str, frozenset[str]], bool] | None = None) -> None:
        self.index, self.semantic, self.settings, self.mode = index, semantic, settings, mode
        self.graph = graph or LayerGraph(semantic, adjacency_weight=settings.adjacency_weight)
        self.floor = floor_for(index.embedder.name, settings)
        self.in_scopes = in_scopes  # (node id, visible scopes) -> may the reader see it (Memory.visible)

    def run(self, query: str, limit: int = 10, *, layer: str | None = None, explain: bool = False,
            visible: frozenset[str] | None = None, tags: tuple[str, ...] = (), since: str | None = None,
            asker: str | None = None) -> list[Hit]:
        """The `limit` best hits for `query` (`layer`: "episodic" or "semantic" only), best first, among
        the records of the `visible` scopes (None: every scope) carrying every one of `tags` and
        recorded since `since` (a lens's filters); `asker`: who asks (their name as they speak), whose
        own statements a question about themselves ("my", "I") ranks first (relevance.said_by_asker)."""
        if not isinstance(query, str) or not query.strip():
            raise ValueError("cannot recall with an empty query")
        check_query(query)
        if not 1 <= int(limit) <= 1000:
            raise ValueError(f"limit {limit} is outside 1..1000")
        if layer is not None and layer not in LAYER_KINDS:
            raise ValueError(f"unknown layer {layer!r}; use one of {', '.join(LAYER_KINDS)}")
        allowed = self.index.select(kind=LAYER_KINDS[layer] if layer else None, scopes=visible, tags=tags or None,
                                    since=since)
        in_scopes = self.in_scopes
        graph = self.graph if visible is None or in_scopes is None else \
            self.graph.within(lambda node: in_scopes(node, visible))
        q = Query(query, int(limit), vector=query_vector(self.index, query), wanted=frozenset(query_terms(query)),
                  known=self.index.senders(), index=self.index, settings=self.settings, floor=self.floor,
                  stages=self.settings.stages, graph=graph, semantic=self.semantic, mode=self.mode, layer=layer,
                  visible=visible, tags=tags, since=since, asker=asker, allowed=allowed)
        cands = Candidates(self.index)
        for stage in q.stages:
            cands = STAGE_FUNCTIONS[stage](cands, q)
        out = shown_hits(cands, q.limit)
        if explain:
            for hit in out:
                c = cands.seen[hit.id]
                hit.parts = {**{f"{n}_rank": float(r) for n, r in c.ranks.items()},
                             "relevance": c.relevance if c.relevance is not None else 0.0, "spread": c.spread,
                             "score": hit.score}
        return out

    def relevant(self, query: str, records: list[SemanticRecord]) -> set[str]:
        """The ids of the semantic `records` at or above the relevance floor for `query`, measured as
        `recall` measures its own candidates: the `recall` skill holds its hits to it, so an unrelated
        question gets nothing there either (it listed the nearest records, however far)."""
        if not records:
            return set()
        return relevant_records(query_vector(self.index, query), frozenset(query_terms(query)), records, self.index,
                                self.floor)
