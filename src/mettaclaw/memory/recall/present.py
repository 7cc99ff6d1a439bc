"""The list the reader is shown: a `Hit` per candidate, repeats and covered hits left out (dedup), a
revision above what it revises (revisions), and the text the model reads (`render`).

Why: the model pays for every line it reads, so episodes and the facts distilled from them compete
for the same few slots; a hit whose cited episodes are all shown by a better hit adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from mettaclaw.memory.core.tags import PRIOR_TIME
from mettaclaw.memory.core.text import (
    attributed,
    label,
    labelled_sentences,
    measured_parts,
    only_asks,
    speakers,
    stem,
    term_set,
    words,
)
from mettaclaw.textutil import cap_head

from .candidates import Candidate, Candidates
from .relevance import sentence_vectors

SHOWING_KINDS = ("fact", "summary")  # semantic kinds whose text restates their episodes
MAX_CITES_SHOWN = 5  # episodes named beside a hit (the rest are "...": `history` or the id shows them)
MAX_HIT_CHARS = 2_000  # of one hit's text shown: a pasted log a query finds must not crowd out the others
MAX_SOURCE_CHARS = 200  # of a knowledge prior's file and headings shown with it (a heading may be a paragraph)
# A later statement that revises an earlier one on the same subject is shown above it: "the cabin wifi
# password changed, it is now cedar-77" first, not second to "the wifi password is pinecone-42" (closer
# to the question's words, which the old statement repeats). Same subject: cosine at least this (all-
# MiniLM-L6-v2: a correction and what it corrects 0.79-0.91, two different events of one kind ("a
# support group" / "a conference") 0.83, so the revising words decide); a revision: one of these words.
SAME_SUBJECT = {"hash": 0.5}
DEFAULT_SAME_SUBJECT = 0.75
# ... or closer than this and sharing a content word, names aside ("My dentist is Dr. Patel" / "I switched
# dentists, I now see Dr. Romero" 0.74; "Our wifi password is sunflower77" / "I reset the router, the wifi
# password is now maple12" 0.70; but "My address is 12 Elm Street" / "My phone number is 555-0101" 0.75);
# in terse chat a revision shares a word and less meaning ("finally moved into the leeds flat" / "leeds
# didnt work out, im in sheffield now"), and moving it is only ever showing the later statement first
SHARED_WORD_SUBJECT = {"hash": 0.35}
DEFAULT_SHARED_WORD_SUBJECT = 0.4
# ... or said by the same person and this close: both answer the question asked (they are hits for it), and
# a person's later word on it in revising words ("raised my lesson price to 55/hr" after "i charge 45 an
# hour", 0.60 with both labels) is their current one, though the two share no word; one person's unrelated
# lines are about 0.4 ("I reset the router, the wifi password is now maple12" / "My address is 12 Elm Street")
SAME_SPEAKER_SUBJECT = {"hash": 0.2}
DEFAULT_SAME_SPEAKER_SUBJECT = 0.5
REVISION_WORDS = frozenset(("actually", "correction", "corrected", "changed", "moved", "instead", "anymore",
                            "longer", "now", "update", "updated", "rescheduled", "postponed", "switched",
                            "sold", "bought", "raised", "lowered", "reset", "replaced", "renamed", "quit",
                            # a value that changed ("my coverage has improved to 78%", "extended my sessions
                            # to 4 hours", "the target was adjusted to 1,350 words")
                            "increased", "decreased", "improved", "extended", "adjusted", "reduced", "expanded",
                            "grew", "grown", "upgraded", "downgraded", "revised", "shifted", "dropped"))
# "new" revises only the thing it names, when an earlier hit is about that thing ("my new address is 5 Oak
# Road" after "my address is 12 Elm Street"): as a revising word it moved "a new song" above anything
# earlier that shared a word with it
RENEWING = "new"


@dataclass
class Hit:
    layer: str  # episodic | longterm | semantic
    id: str
    text: str
    score: float = 0.0
    cites: list[str] = field(default_factory=list)  # the episodes it stands for (provenance)
    parts: dict[str, float] | None = None
    shows: bool = True  # its text carries what its episodes said (an episode, memory, fact or summary),
    # unlike a concept's name, which merely points at them; only a hit that shows its episodes covers them
    time: str = ""
    source: str = ""  # where a knowledge prior stood: its file and headings

    @property
    def covers(self) -> list[str]:
        return self.cites if self.shows else []


def hit_of(c: Candidate) -> Hit:
    """The hit a candidate is shown as: a semantic record with the episodes it came from; an index
    row with the episodes it cites (a dream record's mirror) or is (an episode), its time, and where
    a knowledge prior stood."""
    if c.record is not None:
        return Hit("semantic", c.record.id, c.record.content, c.score, list(c.record.source_episodes),
                   shows=c.record.kind in SHOWING_KINDS)
    assert c.row is not None
    meta = c.row.metadata
    cites = [e for e in str(meta.get("cites", "")).split("|") if e] if c.layer == "semantic" else \
        [c.row.id] if c.layer == "episodic" else []
    source = ""
    if meta.get("kind") == "prior" and meta.get("breadcrumb"):
        # which file and section it came from (`cabin.md > Wifi`): with its row's id alone, neither
        # the model nor the person could say where the knowledge stood
        crumb = " ".join(str(meta["breadcrumb"]).split())
        source = crumb if len(crumb) <= MAX_SOURCE_CHARS else crumb[:MAX_SOURCE_CHARS] + " ..."
    text = c.row.document if c.passage is None else passage_shown(c.passage, c.row.document)
    return Hit(c.layer, c.key, text, c.score, cites, time=str(meta.get("time", "")), source=source)


def passage_shown(passage: str, whole: str) -> str:
    """A long text's passage as it is shown: with how long the whole is, so the reader knows there is
    more (the `history` of its episode, or the file, has it)."""
    return f"{passage} [a passage of {len(whole):,} characters]"


def shown_hits(cands: Candidates, limit: int) -> list[Hit]:
    """The list made for the reader (`cands.shown`), or, before a stage made one, the `limit` best
    contending candidates as hits."""
    if cands.shown is not None:
        return cands.shown[:limit]
    return [hit_of(c) for c in cands.best()[:limit]]


def render(hits: list[Hit], explain: bool = False) -> str:
    """Hits as the model reads them: numbered, with layer, time, id and the episodes they stand for."""
    lines = []
    for n, hit in enumerate(hits, start=1):
        src = f", from {', '.join(hit.cites[:MAX_CITES_SHOWN])}{' ...' if len(hit.cites) > MAX_CITES_SHOWN else ''}" \
            if hit.cites and hit.cites != [hit.id] else ""
        when = f" ({': '.join(p for p in (hit.time, hit.source) if p)})" if hit.time or hit.source else ""
        line = f"{n}. [{hit.layer}]{when} {cap_head(hit.text, MAX_HIT_CHARS, 'text')} (id {hit.id}{src})"
        if explain and hit.parts:
            line += " {" + ", ".join(f"{k}={v:.3g}" for k, v in sorted(hit.parts.items())) + "}"
        lines.append(line)
    return "\n".join(lines)


# --- dedup
def normalised(text: str) -> str:
    """What makes two hits the same statement: the same words, whatever the spacing and case."""
    return " ".join(text.casefold().split())


def bare_statement(sentence: str, known: frozenset[str]) -> str:
    """A labelled sentence as a statement, whoever said it and however it ends (`normalised` without
    its "Who: " label and its last stop: a record's shown sentences end with one, `attributed`)."""
    return normalised(sentence.removeprefix(label(sentence, known) or "")).rstrip(".!? ")


def without_shown(hit: Hit, shown: set[str], known: frozenset[str]) -> Hit | None:
    """A dream record's hit without the sentences a better hit already shows (`shown`, `bare_statement`),
    each speaker named once per run as the dream writes them (`attributed`); None when that is all of
    them. It still cites every episode: those it no longer shows are shown above."""
    parts = labelled_sentences(hit.text, known)
    kept = [s for s in parts if bare_statement(s, known) not in shown]
    if len(kept) == len(parts):
        return hit
    if not kept:
        return None
    heads = [label(s, known) or "" for s in kept]
    return replace(hit, text=attributed([(h[:-2], s[len(h):]) for h, s in zip(heads, kept, strict=True)]))


MAX_LIFTED = 1  # episodes shown above the dream record that gathers them
MAX_GLUED = 3  # a record citing at most this many episodes adds nothing over them but the glue


def statements_first(ordered: list[Hit], known: frozenset[str], window: int = 10) -> list[Hit]:
    """The ranked hits with what people said before what was made of it, and answers before questions:
    for a dream record of a few statements (at most MAX_GLUED episodes), the best of its own episodes
    below it among the first `window` hits (those shown) is moved just above it, and hits that only ask
    (text.only_asks) go after every hit that says something.

    Why: a dream record that contains the answer ranked first, glued to its look-alike or to the value
    it revised ("Maya charges 40 an hour. Maya now charges 55."), and an earlier asking of a question
    shares its words; the statement itself is what answers (the record then shows only the rest). Only
    one, and only from among those shown: lifting a record's episodes from further down filled the
    first places with what the record had gathered, not with what answers (LoCoMo R@10 0.895 -> 0.814
    lifting two from anywhere, 0.849 one from the next ten); and only from a record of a few: one of
    many gathers what a question about a person's doings needs in one place, and lifting its best
    episode pushed the record out of the first ten."""
    position = {h.id: n for n, h in enumerate(ordered)}
    out: list[Hit] = []
    placed: set[str] = set()
    for hit in ordered:
        if hit.id in placed:
            continue
        if hit.layer == "semantic" and hit.shows and len(hit.cites) <= MAX_GLUED:
            at = position[hit.id]
            own = sorted(position[e] for e in hit.cites if e in position and at < position[e] < window)
            for n in own[:MAX_LIFTED]:
                if ordered[n].id not in placed:
                    out.append(ordered[n])
                    placed.add(ordered[n].id)
        out.append(hit)
        placed.add(hit.id)
    asking = [h for h in out if h.layer != "semantic" and only_asks(h.text, known)]
    if not asking or len(asking) == len(out):
        return out
    asked = {h.id for h in asking}
    return [h for h in out if h.id not in asked] + asking


def dedup(ordered: list[Hit], limit: int, known: frozenset[str]) -> list[Hit]:
    """The best hits that show something new: pointers (concepts) and hits whose episodes a better
    hit already shows are left out, and a statement said again in the same words is one hit that
    cites every episode that said it (a "who: " label read with the `known` senders, text.label).
    A dream's record shows only the sentences no better hit shows (`without_shown`): a theme below
    the episodes it gathers repeated their words, and the model paid for them twice."""
    out: list[Hit] = []
    covered: set[str] = set()
    shown: set[str] = set()  # the sentences shown so far, without their speakers' labels (`bare_statement`)
    said: dict[str, Hit] = {}
    quoting: dict[str, Hit] = {}  # a labelled hit ("Sam: X") by its words without the label ("x")
    for hit in ordered:
        if not hit.shows:
            continue  # activation flowed through it; the model is shown what it points at instead
        key = normalised(hit.text)
        head = label(hit.text, known)
        bare = normalised(hit.text[len(head):]) if head else key
        # a note kept in the words someone said ("remember X" of "Sam: X") is that statement again;
        # two people who said the same words are not one statement, so only an unlabelled text matches
        same = said.get(key) or (said.get(bare) if head else quoting.get(key))
        if same is not None:
            same.cites = list(dict.fromkeys([*same.cites, *hit.cites]))
            covered.update(hit.covers)
            continue
        if hit.covers and set(hit.covers) <= covered:
            continue
        if hit.layer == "semantic":
            trimmed = without_shown(hit, shown, known)
            if trimmed is None:
                continue
            hit = trimmed
        covered.update(hit.covers)
        shown.update(bare_statement(s, known) for s in labelled_sentences(hit.text, known))
        said[key] = hit
        if head:
            quoting.setdefault(bare, hit)
        out.append(hit)
        if len(out) >= limit:
            break
    return out


# --- revisions
def latest_first(hits: list[Hit], cands: Candidates, known: frozenset[str]) -> list[Hit]:
    """The shown hits, each revision (a later hit with a sentence in revising words on the subject of
    an earlier statement of the memory index: `same_subject`) moved just above the first earlier
    hit it revises; nothing else moves. A dream's record that shows its episodes revises too: a new
    address the record of both addresses covers is shown in it, not on its own, so without it the
    old address came first and the new one only in the record below. And a dream's record is revised,
    sentence by sentence (`statement_parts`), when it gathers an earlier statement the revision
    revises: a theme of a person's many statements, shown first with the old value among them, went
    above the revision. `known`: the senders, whose names are no shared subject."""
    timed = [h for h in hits if h.time not in ("", PRIOR_TIME) and h.shows]  # a prior has no time
    revisions = revising_sentences(timed, cands, known)
    if not revisions:
        return hits
    parts = statement_parts(timed, cands, known)
    aside = frozenset(term_set(" ".join(known))) | term_set(" ".join(REVISION_WORDS))
    name = cands.index.embedder.name
    close = SAME_SUBJECT.get(name, DEFAULT_SAME_SUBJECT), SHARED_WORD_SUBJECT.get(name, DEFAULT_SHARED_WORD_SUBJECT)
    own = SAME_SPEAKER_SUBJECT.get(name, DEFAULT_SAME_SPEAKER_SUBJECT)
    out = list(hits)
    for new in timed:
        if new.id not in revisions:
            continue
        who = speakers(new.text, known)
        for old in out[: out.index(new)]:
            # an earlier statement, or a dream record gathering one (not the revision: dedup showed
            # the revision in it, as the record covers it)
            if old.id not in parts or old.time >= new.time:
                continue
            same_person = bool(who) and speakers(old.text, known) == who
            if any((general or renewed & held) and (same_subject(float(vector @ v), held, said, aside, *close)
                                                    or (same_person and float(vector @ v) >= own))
                   for vector, held in parts[old.id]
                   for v, said, general, renewed in revisions[new.id]):
                out.remove(new)
                out.insert(out.index(old), new)
                break
    return out


def statement_parts(hits: list[Hit], cands: Candidates, known: frozenset[str]
                    ) -> dict[str, list[tuple[Any, frozenset[str]]]]:
    """What a revision is compared with, hit by hit: an episode or memory as a whole (its vector and
    terms), a dream record sentence by sentence, as a record gathers statements each of which may be
    the one revised."""
    rows = [h for h in hits if h.layer != "semantic"]
    whole = cands.index.vectors_of({h.id: h.text for h in rows})
    out: dict[str, list[tuple[Any, frozenset[str]]]] = {h.id: [(whole[h.id], term_set(h.text))] for h in rows if h.id in whole}
    records = [h for h in hits if h.layer == "semantic"]
    if records:
        vectors = sentence_vectors([cands.seen[h.id] for h in records], cands.index, known)
        for h in records:
            said = measured_parts(cands.seen[h.id].text, known, record=True)
            if h.id in vectors and len(vectors[h.id]) == len(said):
                out[h.id] = [(v, term_set(s)) for v, s in zip(vectors[h.id], said, strict=True)]
    return out


def revising_sentences(hits: list[Hit], cands: Candidates, known: frozenset[str]
                       ) -> dict[str, list[tuple[Any, frozenset[str], bool, frozenset[str]]]]:
    """Each hit's sentences in revising words: their vectors (`sentence_vectors`), terms, whether a
    REVISION_WORDS word is among them, and what they call new (`RENEWING`). Why sentences: in a long
    chat turn "don't quit" or "now" is rarely about what the rest of the turn shares with an
    earlier hit."""
    said = {h.id: measured_parts(cands.seen[h.id].text, known, record=h.layer == "semantic")
            for h in hits}  # as its vectors are
    showing = {h.id: {bare_statement(s, known) for s in labelled_sentences(h.text, known)} for h in hits}  # maybe fewer
    found: dict[str, list[tuple[int, bool, frozenset[str]]]] = {}
    for i, parts in said.items():
        for n, sentence in enumerate(parts):
            if bare_statement(sentence, known) not in showing[i]:
                continue
            ws = words(sentence)
            general = bool(REVISION_WORDS.intersection(ws))
            renewed = frozenset(stem(after) for w, after in zip(ws, ws[1:], strict=False) if w == RENEWING)
            if general or renewed:
                found.setdefault(i, []).append((n, general, renewed))
    if not found:
        return {}
    vectors = sentence_vectors([cands.seen[i] for i in found], cands.index, known)
    return {i: [(vectors[i][n], term_set(said[i][n]), general, renewed) for n, general, renewed in at]
            for i, at in found.items() if i in vectors and len(vectors[i]) == len(said[i])}


def same_subject(cosine: float, old: frozenset[str], new: frozenset[str], aside: frozenset[str],
                 close: float, shared_word_close: float) -> bool:
    """Whether two statements are about one subject: `close` in meaning, or `shared_word_close` and
    sharing a content word (the speakers' names and the revising words aside)."""
    return cosine >= close or cosine >= shared_word_close and bool((old & new) - aside)
