"""SemanticMemory's reading side: resolving a reference, recall with filters and scopes, history,
tags and the KNOWLEDGE block. A mixin of SemanticMemory (memory.py), which holds the stores it reads:
`records`, `vectors`, `embedder`, `clock`, `weights`, `thresholds`, and the `touches` its reads note
(recall.Touches): reading writes nothing; the writer applies them (`apply_touches`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.text import MAX_QUERY_CHARS, STOPWORDS, check_query, words
from mettaclaw.memory.core.times import epoch_seconds
from mettaclaw.textutil import quoted

from .knowledge import render_knowledge, render_knowledge_lines, render_names
from .normalize import content_key, normalize_name
from .records import RecallResult, SemanticRecord, bare_id, check_kinds, mentions_id
from .scoring import MODES, Touches, apply_touches, gather, score
from .store import RecordFilter

MAX_RECALL_LIMIT = 1000  # the most records one recall returns (the `recall` skill's limit= is checked against it)


class AmbiguousRef(LookupError):
    """A name or text that several records answer to: a caller that would otherwise make a new record
    of that name (relate's unknown names become concepts) must not."""


@dataclass
class Context:
    """A built KNOWLEDGE block, the level it reached (names, relations, full; none) and its cost."""

    text: str
    level: str
    ms: float


class SemanticReading:
    """Reads over the records of one SemanticMemory."""

    records: Any
    vectors: Any
    embedder: Any
    clock: Any
    timer: Callable[[], float]  # seconds, for time budgets (SemanticMemory's `timer`)
    weights: Any
    thresholds: Any
    noise: Any
    touches: Touches
    _scope_tags: set[str] | None

    def resolve(self, ref: str, visible: frozenset[str] | None = None) -> SemanticRecord:
        """An id, a concept's name, or a fact's exact text (current versions first), among the records
        of the `visible` scopes (None: all); a record of another scope is "no record", as if absent."""
        ref = (ref or "").strip()
        if not ref:
            raise LookupError("no record named: the reference is empty")
        rec = self.records.get(ref)
        if rec is None and (bare := bare_id(ref)) is not None:  # `"<id>".`, an id in capitals: the id
            rec = self.records.get(bare)
        if rec is not None and scopes.allows(visible, rec.tags):
            return rec
        name, text = normalize_name(ref), content_key(ref)
        for current in (True, False):
            # a key that normalises to nothing ("?", "...") names nothing: unnamed records share that empty key.
            # A concept's name and another record's text are both what `ref` names: the name alone was
            # looked at when it matched, so `forget Tea is hot` deleted a concept named so and kept the fact
            matched = [*(self.records.find_by_key(name_norm=name, current_only=current) if name else []),
                       *(self.records.find_by_key(content_key=text, current_only=current) if text else [])]
            found = list({r.id: r for r in matched if scopes.allows(visible, r.tags)}.values())
            if len(found) == 1 or (found and not current):
                return max(found, key=lambda r: r.recorded_at)
            if found:
                ids = ", ".join(f"{r.id} ({r.content[:40]})" for r in found[:5])
                raise AmbiguousRef(f"{quoted(ref)} names {len(found)} records: {ids}; use an id")
        raise LookupError(f"no record with id, name or text {quoted(ref)}")

    def named(self, ref: str, scope: str | None = None) -> SemanticRecord | None:
        """The record `ref` names in `scope` (None: any), or None for a name of no record (relate makes it
        a concept). A name several records answer to is refused (AmbiguousRef), and so is an id of no
        record here (mistyped, forgotten, another scope's, an episode's): it was made a concept named by
        the id's text."""
        try:
            return self.resolve(ref, None if scope is None else frozenset({scopes.check(scope)}))
        except AmbiguousRef:
            raise
        except LookupError:
            if mentions_id(ref):  # `<id>.`, `id <id>`, a cut id: each was made a concept named by it
                raise LookupError(f"no fact or concept with id {ref.strip()!r} here: relate links facts and "
                                  "concepts by id, name or text, and only a name of no record becomes a new "
                                  "concept") from None
            return None

    def recall(self, query: str | int | None = None, limit: int = 10, *, mode: str = "semantic", tags_all: Any = (),
               tags_any: Any = (), tags_none: Any = (), kind: Any = None, category: str | None = None,
               min_confidence: float | None = None, time_from: Any = None, time_to: Any = None,
               name_pattern: str | None = None, as_of: Any = None, include_history: bool = False,
               context: Any = (), explain: bool = False, touch: bool = True,
               visible: frozenset[str] | None = None,
               relevant: Callable[[str, list[SemanticRecord]], set[str]] | None = None) -> list[RecallResult]:
        """Ranked records. Also the layer protocol's `recall(limit, **filters)`: an int first argument is
        the limit. Current facts only unless `as_of` (a time) or `include_history`. `relevant(query,
        records)`: the ids among them at a relevance floor (RecallPipeline.relevant); the others are dropped
        before the use is counted, since a record recall throws away was not used (it was strengthened
        for every unrelated question the floor turned away); `touch` notes that use (`touch`). Mode
        logical lists by filters: no floor."""
        if isinstance(query, int) and not isinstance(query, bool):
            query, limit = None, query
        query = (query or "").strip()
        if mode not in MODES:
            raise ValueError(f"recall mode {mode!r} is not one of {', '.join(MODES)}")
        if mode == "semantic" and not query:
            raise ValueError("semantic recall needs a query (use mode='logical' to list by filters)")
        check_query(query)
        if not 1 <= int(limit) <= MAX_RECALL_LIMIT:
            raise ValueError(f"limit {limit} is outside 1..{MAX_RECALL_LIMIT}")
        as_tuple = lambda v: (v,) if isinstance(v, str) else tuple(v or ())  # noqa: E731
        check_kinds(as_tuple(kind))  # a kind no record has is a mistake, as in learn
        # tags are kept in lower case (learn): `recall #Person` found nothing and `-#Person` left in
        # what `learn ... #Person` had tagged
        as_tags = lambda v: tuple(str(t).strip().lower() for t in as_tuple(v))  # noqa: E731
        tags_all, tags_any, tags_none = self.scope_filter_parts(visible, as_tags(tags_all), as_tags(tags_any), as_tags(tags_none))
        f = RecordFilter(tags_all, tags_any, tags_none, as_tuple(kind), category,
                         min_confidence, epoch_seconds(time_from), epoch_seconds(time_to), name_pattern, epoch_seconds(as_of),
                         include_history)
        qvec = self.embedder.embed([query])[0] if query else None
        cands = gather(self.records, self.vectors, qvec, query, mode, f, int(limit))
        ranked = score(cands, self.records, self.clock(), list(as_tuple(context)), self.weights, mode != "logical",
                       self.noise, retrieving=mode != "logical" and f.as_of is None and not include_history)
        top = ranked[: int(limit)]
        if relevant is not None and query and mode != "logical":
            kept = relevant(query, [rec for rec, _, _ in top])
            top = [t for t in top if t[0].id in kept]
        if touch and top and f.as_of is None:
            self.touches.note([rec.id for rec, _, _ in top], self.clock(), current_only=False)
        return [RecallResult(rec.id, s, rec, "semantic", list(rec.source_episodes), parts if explain else None)
                for rec, s, parts in top]

    def _known_scope_tags(self) -> set[str]:
        """The scope tags records carry (a superset: a scope whose records are all gone may stay)."""
        if self._scope_tags is None:
            self._scope_tags = {t for t in self.records.tag_counts(current_only=False) if t.startswith(scopes.PREFIX)}
        return self._scope_tags

    def _note_scope(self, tags: Any) -> None:
        if self._scope_tags is not None:
            self._scope_tags.update(t for t in tags if t.startswith(scopes.PREFIX))

    def scope_filter(self, visible: frozenset[str] | None) -> RecordFilter:
        """A filter for the current records of the `visible` scopes."""
        return RecordFilter(*self.scope_filter_parts(visible, (), (), ()))

    def scope_filter_parts(self, visible: frozenset[str] | None, tags_all: tuple[str, ...], tags_any: tuple[str, ...],
                tags_none: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """The tag clauses that keep a recall to the `visible` scopes (scopes.py: untagged is the agent's)."""
        if visible is None:
            return tags_all, tags_any, tags_none
        own = {scopes.PREFIX + v for v in visible if v != scopes.DEFAULT}
        if scopes.DEFAULT in visible:
            return tags_all, tags_any, tags_none + tuple(sorted(self._known_scope_tags() - own))
        if len(own) == 1:
            return tags_all + tuple(own), tags_any, tags_none
        if tags_any:
            raise ValueError("a recall over several scopes cannot also ask for any-of tags")
        return tags_all, tuple(sorted(own)), tags_none

    def touch(self, record_ids: list[str]) -> None:
        """Note a use of these records now (recall showed them), applied by the next writer
        (`apply_touches`): access time, stability, Hebbian links among those still current."""
        self.touches.note(list(record_ids), self.clock())

    def apply_touches(self) -> int:
        """Write the touches noted since (scoring.apply_touches), oldest first: the writer's step, under
        the memory's lock, before a write of its own, at the end of a turn and at close. How many."""
        return apply_touches(self.records, self.touches)

    def relation_types(self) -> set[str]:
        """The relation types links may have (the built-in ones and those made since)."""
        return set(self.relations.types())

    def history(self, id_or_name: str, visible: frozenset[str] | None = None) -> list[SemanticRecord]:
        """Every version of a fact, oldest first (closed ones carry valid_to and superseded_by)."""
        return self.records.by_lineage(self.resolve(id_or_name, visible).lineage)

    def changes(self, record_id: str) -> list[dict[str, Any]]:
        """The write log of one record: created, reinforced, merged, superseded."""
        return self.records.versions(record_id)

    def provenance(self, record_id: str, trace: Any) -> list[tuple[str, Any]]:
        """Source episodes of a record, resolved through anything with `get(episode_id)` (the trace)."""
        rec = self.records.get(record_id)
        if rec is None:
            raise LookupError(f"no record {record_id!r}")
        return [(ep, trace.get(ep)) for ep in rec.source_episodes]

    def tags(self, visible: frozenset[str] | None = None) -> dict[str, int]:
        """Tags of current records with their counts (scope tags are not tags a reader sees)."""
        if visible is None:
            return {t: n for t, n in self.records.tag_counts().items() if not t.startswith(scopes.PREFIX)}
        found = self.records.select(self.scope_filter(visible))
        counts = Counter(t for rec in found for t in scopes.user_tags(rec.tags))
        return dict(counts.most_common())

    def knowledge_block(self, message: str, budget_chars: int, visible: frozenset[str] | None = None) -> str:
        """The few current facts most relevant to `message`, within `budget_chars` ("" when none is)."""
        return self.context(message, budget_chars, visible).text

    def context(self, message: str, budget_chars: int, visible: frozenset[str] | None = None,
                budget_ms: float | None = None) -> Context:
        """The KNOWLEDGE block built within a time budget, cheapest level first, each next level only
        while the time left covers what it took last time:
        `names`: the records the message names (people, objects, goals), with their episode counts;
        `relations`: those records' content, confidence and strongest relations;
        `full`: plus the recall over everything by meaning and activation (what knowledge_block was).
        The level reached is reported, so a turn log can show when the budget cut it short. Time is read
        from `self.timer` (time.perf_counter unless a test drives it), so which level a test reaches
        does not depend on the machine's speed."""
        if budget_chars <= 0 or not (message or "").strip():
            return Context("", "none", 0.0)
        timer = self.timer
        began = timer()

        def left() -> float:
            return float("inf") if budget_ms is None else budget_ms - 1000 * (timer() - began)

        named = self._named(message, visible, left)
        level, lines = "names", render_names(named)
        if left() > 0:
            level, hits = "relations", [RecallResult(r.id, 1.0, r) for r in named]
            if left() > self._full_ms:
                step = timer()
                found = self.recall(message[:MAX_QUERY_CHARS], limit=8, explain=True, touch=False, visible=visible,
                                    context=[r.id for r in named])  # ACT-R's spreading from what it names
                self._full_ms = 0.7 * self._full_ms + 0.3 * 1000 * (timer() - step)
                said = set(words(message))
                shown = {r.id for r in named}
                hits += [h for h in found if h.record and h.parts and h.id not in shown and (
                    h.parts["cosine"] >= self.thresholds.relevant  # close in meaning, or about an entity it names
                    or (h.record.subject and h.record.subject != "user" and set(h.record.subject.split()) <= said))]
                level = "full"
            text = render_knowledge(self.records, hits, budget_chars)
        else:
            text = render_knowledge_lines(lines, budget_chars)
        return Context(text, level if text else "none", 1000 * (timer() - began))

    _full_ms = 0.0  # what the full level took, smoothed: it is started only when that much time is left

    NAMED_MAX = 8  # records a message names that the block shows
    NAMED_WORDS = 5_000  # words of a message read for names: a pasted log is not read to its end

    def _named(self, message: str, visible: frozenset[str] | None,
               left: Callable[[], float] = lambda: float("inf"), longest: int = 3) -> list[SemanticRecord]:
        """Current records whose name the message says (word n-grams up to `longest`, the longest
        first at each word), in the order it says them. Each distinct name is looked up once, and
        looking stops when the time budget (`left`, ms) runs out: a pasted log is one store lookup per
        n-gram (docs/decisions/0018)."""
        said = words(message)[: self.NAMED_WORDS]
        found: dict[str, SemanticRecord] = {}
        tried: set[str] = set()
        for start in range(len(said)):
            if len(found) >= self.NAMED_MAX or (start % 64 == 0 and start and left() <= 0):
                break
            for size in range(min(longest, len(said) - start), 0, -1):
                name = normalize_name(" ".join(said[start:start + size]))
                if not name or name in STOPWORDS or name in tried:
                    continue
                tried.add(name)
                for rec in self.records.find_by_key(name_norm=name):
                    if rec.current and scopes.allows(visible, rec.tags):
                        found.setdefault(rec.id, rec)
        return list(found.values())[: self.NAMED_MAX]
