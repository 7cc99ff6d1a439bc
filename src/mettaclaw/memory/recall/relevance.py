"""How close a candidate is to the query: the query's vector (without the names of people who spoke),
each candidate's best sentence, the relevance floor nothing below which is shown; and whose words it
is: the people a question names, and the person asking.

Why the best sentence: a long turn or a theme is blurred as a whole by its other sentences, while
the one that answers the question is as close to it as a short line would be. Why a floor: an
unrelated question gets "no memories match", not the nearest records however far. Why the speakers:
recall is mostly over chat, where the same kind of thing is said by several people ("my wifi
password is ...", "I live in ..."); a question about one of them, or by one of them about
themselves, is about that person's words, which are no closer in words or meaning than the others'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mettaclaw.memory.core.settings import DEFAULT_SETTINGS, RecallSettings
from mettaclaw.memory.core.text import (
    LONG_TEXT,
    asks_again,
    labelled_sentences,
    only_asks,
    passages,
    query_terms,
    says_nothing,
    speakers,
    term_set,
)
from mettaclaw.memory.stores.vectors import cosine_scores

from .candidates import Candidate, Candidates, RecallIndex

if TYPE_CHECKING:
    from mettaclaw.memory.semantic.records import SemanticRecord

FLOORS = {"hash": 0.3}  # relevance floor by embedder name (the 64-d hash embedder: noise about +-0.13)
DEFAULT_FLOOR = 0.2  # all-MiniLM-L6-v2: unrelated sentences score about 0 to 0.15


def floor_for(embedder_name: str, settings: RecallSettings = DEFAULT_SETTINGS) -> float:
    return settings.floor if settings.floor is not None else FLOORS.get(embedder_name, DEFAULT_FLOOR)


@dataclass(frozen=True)
class QueryVector:
    """The query's vector as recall compares candidates with it (`query_vector`): `named`, the people
    it names who spoke; `basis`, the span of their names' vectors; `without`, the query's vector
    without its part along them (unit length)."""

    vector: Any
    named: frozenset[str] = frozenset()
    basis: Any = None
    without: Any = None

    def cosines(self, rows: Any, quoting: bool = False) -> Any:
        """The cosine of each row (or of one vector) with the query; for a candidate `quoting` someone
        the query names, both without the names' part."""
        rows = np.atleast_2d(np.asarray(rows, dtype=np.float32))
        if not quoting or self.basis is None:
            return rows @ self.vector
        return cosine_scores(self.without, without(rows, self.basis))


def query_vector(index: RecallIndex, query: str) -> QueryVector:
    """The query's vector, and without the names in it of people who spoke (`QueryVector`); none
    taken out when it asks about nothing but the names ("tell me about Sam")."""
    q = np.asarray(index.embedder.embed([query])[0], dtype=np.float32)
    wanted = frozenset(query_terms(query))
    named = named_in(wanted, index.senders())
    if not named or wanted <= term_set(" ".join(named)):
        return QueryVector(q)
    basis = orthonormal(index.embedder.embed(sorted(named)))
    out = without(q[None, :], basis)[0]
    norm = float(np.linalg.norm(out))
    return QueryVector(q, named, basis, out / norm) if norm > 1e-6 else QueryVector(q)


def best_cosine(q: QueryVector, rows: dict[str, Any], quoting: bool = False) -> dict[str, float]:
    """Each candidate's best cosine with the query over its `rows` (`QueryVector.cosines`), all of them
    in one matrix product and one reduction (a call per candidate cost a numpy call per row)."""
    if not rows:
        return {}
    counts = [len(r) for r in rows.values()]
    cosines = np.asarray(q.cosines(np.vstack(list(rows.values())), quoting), dtype=np.float32)
    return dict(zip(rows, np.maximum.reduceat(cosines, np.cumsum([0, *counts[:-1]])).tolist(), strict=True))


def judge(q: QueryVector, vectors: dict[str, Any], seen: Mapping[str, Candidate], known: frozenset[str]
          ) -> tuple[dict[str, float], dict[str, float]]:
    """Each candidate's best cosine with the query over its rows of `vectors` (its sentences, or
    its whole text): as the relevance floor measures it, and as it ranks.

    Why: a chat line is embedded with its "Sam: " label, so to "where does Sam work" every line of
    Sam's is close, the shorter the closer ("Sam: which one?" above "Sam: I started a new job at
    Globex"), and a person's small talk took the first ranks and passed the floor. A candidate
    quoting someone the query names is measured without the names' part, in the query and in it,
    and ranked with what the names added on average among those candidates: being that person's
    words still counts, the same for every one of them, not more the less a line says. Every other
    candidate is measured without the names too: "congrats keiko" was closer to "which city is Keiko
    based in now" than her own "I'm in Sheffield now", by her name alone."""
    # a record with no sentence (an empty text) is close to nothing
    rows = {k: np.atleast_2d(v) for k, v in vectors.items() if np.size(v)}
    floor = best_cosine(q, rows)
    if q.basis is None:
        return floor, dict(floor)
    plain = floor
    floor = best_cosine(q, rows, quoting=True)  # every candidate without the names: a line naming them is not closer
    quoting = [k for k in rows if q.named & speakers(seen[k].text, known)]
    if not quoting:
        return floor, dict(floor)
    bonus = float(np.median([plain[k] - floor[k] for k in quoting]))
    mine = frozenset(quoting)
    return floor, {k: c + bonus if k in mine else c for k, c in floor.items()}


def rerank_without_names(q: QueryVector, found: list[tuple[str, float]], cands: Candidates, known: frozenset[str]
                         ) -> tuple[list[str], dict[str, float]]:
    """The vector ranking's candidates ordered as `judge` ranks them, and their cosines as the floor
    measures them (from the index's copies of their vectors; a row without one keeps its place at
    the end, its score as found)."""
    texts = {k: cands.seen[k].text for k, _ in found}
    rows = cands.indexed(cands.seen[k] for k in texts)
    held = cands.index.vectors_of({i: texts[k] for i, k in rows.items()})
    floor, ranked = judge(q, {rows[i]: v for i, v in held.items()}, cands.seen, known)
    order = sorted(ranked, key=lambda k: -ranked[k]) + [k for k, _ in found if k not in ranked]
    return order, {**dict(found), **floor}


def best_sentences(q: QueryVector, pool: list[Candidate], cands: Candidates, known: frozenset[str]
                   ) -> tuple[dict[str, float], dict[str, float]]:
    """Each of the `pool`'s best sentence's cosine with the query, as the floor measures it and as it
    ranks (`judge`): from the sentence vectors the index keeps for rows of several sentences, else
    the row's own vector (the index's copies); a semantic record's sentences are embedded here."""
    rows = cands.indexed(pool)
    vectors = {rows[i]: v for i, v in cands.index.sentence_vectors(list(rows)).items()}
    # a row of one sentence: its cosine as the vector ranking found it, unless names are taken out
    found = {k: cosine for k in rows.values() if k not in vectors and (cosine := cands.seen[k].cosine) is not None} \
        if q.basis is None else {}
    whole = {i: cands.seen[k].text for i, k in rows.items() if k not in vectors and k not in found}
    vectors.update({rows[i]: v for i, v in cands.index.vectors_of(whole).items()})
    vectors.update(record_sentence_vectors([c for c in pool if c.row is None], cands.index, known))
    floor, ranked = judge(q, vectors, cands.seen, known)
    best_passages(q, vectors, cands, known)
    return {**found, **floor}, {**found, **ranked}


def best_passages(q: QueryVector, vectors: dict[str, Any], cands: Candidates, known: frozenset[str]) -> None:
    """Set each long episode's or memory's `passage`: its passage closest to the query (text.passages;
    the vectors are its passages' when it is long), what is shown of it. A dream record is shown whole."""
    for key, rows in vectors.items():
        c = cands.seen[key]
        if c.layer != "semantic" and len(c.text) > LONG_TEXT and np.size(rows):
            parts = passages(c.text, known)
            if len(parts) == len(np.atleast_2d(rows)):
                c.passage = parts[int(np.argmax(q.cosines(rows)))]


def record_sentence_vectors(records: list[Candidate], index: RecallIndex, known: frozenset[str]) -> dict[str, Any]:
    """The vectors of each semantic record's sentences, each with its speaker's label (embedded here:
    the index keeps sentence vectors of its own rows only)."""
    if not records:
        return {}
    parts = [labelled_sentences(c.text, known) for c in records]
    vectors = index.embedder.embed([s for p in parts for s in p])
    out, pos = {}, 0
    for c, found in zip(records, parts, strict=True):
        out[c.key], pos = vectors[pos : pos + len(found)], pos + len(found)
    return out


def sentence_vectors(candidates: list[Candidate], index: RecallIndex, known: frozenset[str]) -> dict[str, Any]:
    """Each candidate's sentence vectors, a row per labelled sentence (a long text's passage,
    `text.passages`): an index
    row's kept ones (a row of one sentence: its own vector), a semantic record's embedded here."""
    rows = {c.row.id: c for c in candidates if c.row is not None}
    several = index.sentence_vectors(list(rows))
    whole = index.vectors_of({i: c.text for i, c in rows.items() if i not in several})
    out = {c.key: np.atleast_2d(np.asarray(v, dtype=np.float32))
           for i, c in rows.items() if (v := several.get(i, whole.get(i))) is not None}
    out.update(record_sentence_vectors([c for c in candidates if c.row is None], index, known))
    return out


def relevance(wanted: frozenset[str], candidates: Iterable[Candidate], floor: float,
              known: frozenset[str] = frozenset()) -> None:
    """Set how related each candidate is, on the cosine scale: its best sentence or its whole vector,
    whichever is closer (a turn of short sentences can be about the question as a whole though none
    of its sentences is on its own), and 1 for one whose own text holds every content word of the
    query (`wanted`: a name, a code, a number). A query without content words ("the of and", "tell
    me about it") asks about nothing, so nothing is related to it: the hash embedder, a bag of words
    stop words included, put every text sharing its "the" and "of" above the floor. Nor is a line that
    says nothing ("ok", "morning!": `says_nothing`), or an earlier asking of the same question
    (`asks_again`), related to any question (`known`: the senders, whose labels are read off)."""
    for c in candidates:
        if not wanted or says_nothing(c.text, known) or asks_again(c.text, wanted, known):
            c.relevance = -1.0
            continue
        c.relevance = max(-1.0 if c.sentence is None else c.sentence, -1.0 if c.cosine is None else c.cosine)
        if c.relevance < floor and wanted <= term_set(c.text):
            c.relevance = 1.0


WORD_EVIDENCE_HITS = 10  # the best BM25 hits whose own words say how much of the question words can find


def word_evidence(wanted: frozenset[str], known: frozenset[str], texts: Iterable[str]) -> float:
    """How much of the question its words find: the largest share, among the texts of the best BM25
    hits, of the question's content terms (`wanted`, the senders' names aside) that a hit's own text
    holds; 1 when the question has no terms but names."""
    asked = wanted - term_set(" ".join(known))
    if not asked:
        return 1.0
    return max((len(asked & term_set(t)) / len(asked) for t in texts), default=0.0)


def closeness(c: Candidate) -> float | None:
    """A candidate's measured cosine with the question (best sentence or whole text), before the floor
    lifts one that holds every question word: what the meaning stage compares."""
    found = [v for v in (c.sentence, c.cosine) if v is not None]
    return max(found) if found else None


def relevant_records(q: QueryVector, wanted: frozenset[str], records: list[SemanticRecord], index: RecallIndex,
                     floor: float) -> set[str]:
    """The ids of the semantic `records` at or above the relevance `floor`, measured as recall
    measures its own candidates (`RecallPipeline.relevant`)."""
    cands = Candidates(index)
    for record in records:
        cands.record(record)
    known = index.senders()
    cosines = judge(q, {r.id: r.embedding for r in records if r.embedding is not None}, cands.seen, known)[0]
    for key, cosine in cosines.items():
        cands.seen[key].cosine = cosine
    for key, cosine in best_sentences(q, list(cands.seen.values()), cands, known)[0].items():
        cands.seen[key].sentence = cosine
    relevance(wanted, cands.seen.values(), floor, known)
    return {c.key for c in cands.seen.values() if c.relevance is not None and c.relevance >= floor}


def orthonormal(vectors: Any) -> Any:
    """An orthonormal basis of the rows' span (Gram-Schmidt through QR). A row that adds no direction
    of its own (two senders whose names embed alike, "Sam" and "sam" for an uncased model) adds none:
    QR would give it an arbitrary one, and a direction of the question would be taken out for nothing."""
    basis, r = np.linalg.qr(np.asarray(vectors, dtype=np.float32).T)
    return basis.T[np.abs(np.diag(r)) > 1e-3]


def without(rows: Any, basis: Any) -> Any:
    """The rows with their components along the orthonormal `basis` taken out."""
    return rows - (rows @ basis.T) @ basis


# --- whose words
def named_in(wanted: frozenset[str], people: Iterable[str]) -> frozenset[str]:
    """The `people` a query of these content terms names (every term of their name in it)."""
    return frozenset(p for p in people if (name := term_set(p)) and name <= wanted)


def quoting_named(cands: Candidates, wanted: frozenset[str], known: frozenset[str], limit: int) -> list[str]:
    """The `limit` best of the dream's records (themes, summaries, facts) among the contending that
    quote only people a query of the content terms `wanted` names (a "who: " label read with the
    `known` senders); none when it names nobody, or everybody, the candidates quote.

    Why: a theme gathers one person's statements on one topic, which is what "what has Melanie
    painted?" asks for, while the other person's replies ("Wow, Melanie, the colours!") are as close
    in words and meaning. Every record quoting the named person, or episodes too, showed more
    (themes are long) and not better; questions naming the wrong person on purpose lost most. The
    best few are the measured compromise (`RecallSettings.speaker_records`)."""
    quoted = {k: speakers(c.text, known) for k, c in cands.contending.items()}
    among = frozenset().union(*quoted.values())
    named = named_in(wanted, among)
    if not named or named == among:
        return []
    return [k for k in sorted(cands.contending, key=lambda k: -cands.contending[k].score)
            if cands.contending[k].layer == "semantic" and quoted[k] and quoted[k] <= named][:limit]


def said_by_asker(cands: Candidates, wanted: frozenset[str], known: frozenset[str], floor: float, asker: str
                  ) -> list[str]:
    """For a question about its asker ("what is my password", "where do I live now", text.
    asks_about_asker) of the content terms `wanted`: the candidates whose best sentence was measured
    that quote only `asker` and pass the relevance `floor`, the closest sentence first, when it names
    no one else who spoke; else none. (Ordered by the fused score, the asker's small talk that shared
    a word with the question took the first ranks.)

    Why: several people tell one memory the same kind of thing, and the asker's "my password" means
    theirs; without this, whoever's statement was closest in words came first. A question naming
    another person ("what did bob say about my car") is about that person's statements
    (`quoting_named`), so it is left as it was. What the asker only asked ("what is my password" last
    week, asked again) answers nothing: it holds the question's words, and ranked above the statement
    it asks about."""
    if named_in(wanted, known) - {asker}:
        return []
    mine = frozenset({asker})
    sentence = {k: cosine for k in cands.measured if (cosine := cands.seen[k].sentence) is not None}
    return [k for k in sorted(sentence, key=lambda k: -sentence[k])
            if sentence[k] >= floor and speakers(cands.seen[k].text, known | mine) == mine
            and not only_asks(cands.seen[k].text, known | mine)]
