"""SemanticMemory: the layer's facade. Every write goes through reconciliation; every recall can
explain its score; nothing is deleted by an update (superseded versions are closed, kept, and
reachable by `as_of` and `history`).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.layers import Announcer
from mettaclaw.memory.core.settings import ActivationWeights
from mettaclaw.memory.core.times import epoch_seconds
from mettaclaw.memory.errors import EmbedderMismatch
from mettaclaw.memory.stores.buffered import FLUSH_EVERY, BufferedVectors, Row
from mettaclaw.memory.stores.embedders import Embedder, signature
from mettaclaw.memory.stores.vectors import VectorStore
from mettaclaw.textutil import quoted

from .graph import (
    CROSS_LAYER,
    INITIAL_WEIGHT,
    RelationRegistry,
    edge_key,
    hand_over_links,
    hebbian,
    update_cooccurrence,
)
from .normalize import content_key, extract_triple, normalize_name, triple_from_atom
from .reading import SemanticReading
from .reconcile import Candidate, Decision, Thresholds, decide, more_specific, thresholds_for
from .records import (
    INDEX_TAG,
    KINDS,
    PROVENANCES,
    Edge,
    LearnResult,
    SemanticRecord,
    confidence_from,
    confirmations_from,
    looks_like_id,
    new_id,
)
from .scoring import Touches
from .store import SemanticStore

STABILITY_DAYS = {"fact": 30.0, "concept": 30.0, "theme": 30.0, "summary": 7.0}
MAX_CONTENT = 4000
MAX_REFERENCES = 200  # episodes a concept keeps citing (the design's cap; oldest evicted first)


class QueuedRecords:
    """The semantic tier's PendingLog (stores/buffered.py): the record store keeps each record's vector
    anyway, so it only marks which ones the index still lacks, in the write's own transaction."""

    def __init__(self, records: SemanticStore) -> None:
        self.records = records

    def queue(self, rows: list[Row]) -> None:
        self.records.queue_vectors([row[0] for row in rows])

    def settled(self, ids: list[str]) -> None:
        self.records.unqueue_vectors(ids)

    def replay(self) -> list[Row]:
        queued = self.records.queued_vectors()
        return [(rec.id, rec.embedding, rec.content, {"kind": rec.kind, "name": rec.name_norm})
                for rec in self.records.get_many(queued) if rec.embedding is not None] if queued else []


def cites(record_id: str, source: str, now: float, instance: bool = False, layer: str = "episodic") -> Edge:
    """The provenance link between a record and what it came from: DERIVED_FROM (record -> source) for
    the episodes it was made from, or an inference's premises (`layer` "semantic" for a record);
    INSTANCE_OF (episode -> concept) for an episode found later to be one more instance of a concept."""
    if instance:
        return Edge(source, record_id, "INSTANCE_OF", 1.0, created_at=now, src_layer=layer)
    return Edge(record_id, source, "DERIVED_FROM", 1.0, created_at=now, dst_layer=layer)


class SemanticMemory(SemanticReading, Announcer):
    """Facts and concepts, their graph and their history. `name = "semantic"` in the layer protocol."""

    name = "semantic"

    def __init__(self, embedder: Embedder, vector_store: VectorStore, record_store: SemanticStore, *,
                 thresholds: Thresholds | None = None, weights: ActivationWeights | None = None,
                 clock: Callable[[], float] = time.time, rewriter: Callable[[str, str], str] | None = None,
                 flush_every: int = FLUSH_EVERY, timer: Callable[[], float] = time.perf_counter) -> None:
        """`clock`: the time of day (epoch seconds) records are stamped with; `timer`: the seconds time
        budgets are measured in (`context`), injected so a test decides how long each step takes."""
        super().__init__()
        self.embedder, self.records = embedder, record_store
        self.thresholds = thresholds or thresholds_for(embedder.name)
        self.weights = weights or ActivationWeights()
        self.noise = np.random.default_rng(self.weights.seed)
        self.clock, self.timer, self.rewriter = clock, timer, rewriter
        sig, recorded = signature(embedder), record_store.get_meta("embedder")
        if recorded is None:
            record_store.set_meta("embedder", sig)
        elif recorded != sig:
            raise EmbedderMismatch(f"the semantic store was built with embedder {recorded!r}; this run uses "
                                   f"{sig!r}. Use the same embedder, or point memoryDir at a fresh folder.")
        self.relations = RelationRegistry(record_store)
        self.vectors = BufferedVectors(vector_store, QueuedRecords(record_store), flush_every)
        self._scope_tags: set[str] | None = None  # scope tags in the store (read once, then kept up to date)
        self.touches = Touches()  # what reads used, written before this memory's next write (apply_touches)

    # ------------------------------------------------------------------ writing
    def learn(self, content: str, *, name: str | None = None, kind: str = "fact", category: str | None = None,
              tags: Any = (), atom: str | None = None, source_episodes: Any = (), provenance: str = "direct_ingestion",
              valid_from: str | float | None = None, properties: dict[str, Any] | None = None,
              confidence: float | None = None, index: bool = False, scope: str | None = None) -> LearnResult:
        """Reconcile one candidate and apply the decision (created/reinforced/merged/superseded).

        `index=True` stores an index over episodes (a dream theme) as it is: it makes no claim to
        reconcile, its provenance must stay exactly what its text shows, and it gets no graph edges,
        since a record citing many episodes would collect activation from all of them as a hub."""
        self.apply_touches()  # the uses read before this write count before it
        if scope is not None:  # a writer's scope; tags carrying one (a new version of a record) keep it
            tags = scopes.with_scope([tags] if isinstance(tags, str) else tags, scope)
        cand, extra = self._candidate(content, name, kind, category, tags, atom, source_episodes, provenance,
                                      valid_from, properties, confidence)
        extra["index"] = index
        self._note_scope(extra["tags"])
        if index:  # no triple either: an index is never the subject of a fact that could supersede it
            extra["tags"] = sorted({*extra["tags"], INDEX_TAG})
            cand = dataclasses.replace(cand, triple=None)
        with self.records.transaction():
            decision = Decision("create") if index else decide(self.records, self.vectors, cand, self.thresholds)
            if decision.action in ("reinforce", "merge"):
                result = self._strengthen(decision, cand, extra)
            else:
                result = self._insert(decision, cand, extra)
        self.vectors.maybe_flush()  # after the commit: an index hiccup never undoes a stored fact
        return result

    def _candidate(self, content: Any, name: str | None, kind: str, category: str | None, tags: Any, atom: str | None,
                   episodes: Any, provenance: str, valid_from: Any, properties: Any, confidence: float | None,
                   ) -> tuple[Candidate, dict[str, Any]]:
        text = " ".join(str(content or "").split())
        if not text:
            raise ValueError("nothing to learn: the content is empty")
        if len(text) > MAX_CONTENT:
            raise ValueError(f"content is {len(text)} chars; a fact holds at most {MAX_CONTENT} (split it)")
        if name and looks_like_id(name):  # `forget ep-5` and `spread ep-5` reach the episode, never the concept
            raise ValueError(f"the name {name.strip()!r} is shaped like a record's id (ep-N, act-N, a uuid), which "
                             "skills take for that record; give the concept a name of words")
        for label, value in (("name", name), ("category", category)):  # each was unbounded: 50,000 characters of a
            if value and len(value.strip()) > MAX_CONTENT:  # name, a megabyte of category, went into every listing
                raise ValueError(f"the {label} is {len(value.strip())} chars; a {label} holds at most {MAX_CONTENT} (a few words)")
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
        if provenance not in PROVENANCES:
            raise ValueError(f"provenance {provenance!r} is not one of {', '.join(PROVENANCES)}")
        if confidence is not None and not 0.0 <= confidence <= 1.0:
            raise ValueError(f"confidence {confidence} is outside [0, 1]")
        tag_list = [tags] if isinstance(tags, str) else list(tags)
        clean_tags = sorted({str(t).strip().lower() for t in tag_list if str(t).strip()})
        eps = [episodes] if isinstance(episodes, str) else [str(e) for e in episodes]
        triple, truth = triple_from_atom(atom) if atom else (None, None)
        triple = triple or extract_triple(text)
        name = (name or "").strip() or (text if kind in ("concept", "theme") and len(text) <= 60 else "")
        vf = epoch_seconds(valid_from) or self.clock()
        probe = SemanticRecord(text, kind, name, normalize_name(name) if name else "")
        vector = self.embedder.embed([probe.embed_text()])[0]
        cand = Candidate(text, kind, name, probe.name_norm, content_key(text), triple, vector, vf, list(dict.fromkeys(eps)),
                         scopes.of_tags(clean_tags))
        if confidence is None and truth is not None and provenance == "agent_inference":
            confidence = truth[1]
        extra = {"category": category, "tags": clean_tags, "atom": atom, "truth": truth, "provenance": provenance,
                 "properties": dict(properties or {}), "confidence": confidence}
        return cand, extra

    def _insert(self, decision: Decision, cand: Candidate, extra: dict[str, Any]) -> LearnResult:
        now = self.clock()
        t = cand.triple
        confirmed = confirmations_from(cand.kind, cand.source_episodes)
        rec = SemanticRecord(
            cand.content, cand.kind, cand.name, cand.name_norm, cand.content_key, extra["category"], extra["properties"],
            extra["atom"], extra["truth"], confidence_from(confirmed) if extra["confidence"] is None else extra["confidence"],
            extra["confidence"] is not None, confirmed, 1.0, STABILITY_DAYS[cand.kind], extra["provenance"],
            list(cand.source_episodes), [now] * len(cand.source_episodes), extra["tags"], [], cand.valid_from, None,
            now, now, None, "", t.subject if t else None, t.relation if t else None, t.object if t else None,
            t.polarity if t else True, id=new_id(), embedding=cand.embedding)
        rec.lineage = decision.targets[0].lineage if decision.targets else rec.id
        closed = decision.targets if decision.action == "supersede" else []
        if decision.action == "historical":  # an older value learned late: a closed past version
            successor = min(decision.targets, key=lambda r: r.valid_from)
            rec.valid_to, rec.superseded_by = successor.valid_from, successor.id
        self._put_version(rec, "created", closed, now)
        if not extra.get("index"):
            for ep in rec.source_episodes:
                self.records.put_edge(cites(rec.id, ep, now))
            update_cooccurrence(self.records, rec.id, rec.source_episodes, now)
        self.announce_capture(rec.id, rec)
        action = "superseded" if closed else "created"
        return LearnResult(rec.id, action, [o.id for o in closed], decision.similarity)

    def _strengthen(self, decision: Decision, cand: Candidate, extra: dict[str, Any]) -> LearnResult:
        rec, now = decision.targets[0], self.clock()
        new_eps = [e for e in cand.source_episodes if e not in rec.source_episodes]
        if cand.source_episodes and not new_eps and set(extra["tags"]) <= set(rec.tags):
            return LearnResult(rec.id, "reinforced", similarity=decision.similarity, duplicate=True)
        action, reindex, replaced = "reinforced", False, None
        if decision.action == "merge":
            action = "merged"
            text = self.rewriter(rec.content, cand.content) if self.rewriter else more_specific(rec.content, cand.content)
            if text != rec.content:
                replaced, rec = rec, self._reworded(rec, text, cand, now)
        rec.reinforcements += confirmations_from(cand.kind, cand.source_episodes, new_eps)
        if not rec.confidence_set:
            rec.confidence = confidence_from(rec.reinforcements)
        rec.source_episodes += new_eps
        rec.source_times += [now] * len(new_eps)
        evicted = []
        if rec.kind == "concept" and len(rec.source_episodes) > MAX_REFERENCES:  # a hub's fan stays bounded
            evicted, rec.source_episodes = rec.source_episodes[:-MAX_REFERENCES], rec.source_episodes[-MAX_REFERENCES:]
            rec.source_times = rec.source_times[-MAX_REFERENCES:]
        if rec.provenance != extra["provenance"]:
            rec.provenance = "hybrid"
        if not set(extra["tags"]) <= set(rec.tags):
            rec.tags, reindex = sorted(set(rec.tags) | set(extra["tags"])), True
        rec.category = rec.category or extra["category"]
        rec.properties = {**rec.properties, **extra["properties"]}  # the newer statement's values win
        rec.last_updated = now
        if replaced is not None:  # a new wording is a new version: the old text stays what was known until now
            self._put_version(rec, action, [replaced], now)
            hand_over_links(self.records, replaced, rec.id, self.relations.is_symmetric)
        else:
            if reindex:
                self._write_vectors([rec])
            self.records.put(rec, reindex=reindex or bool(new_eps))
            self.records.log_version(rec.id, action, now, {"content": rec.content, "reinforcements": rec.reinforcements,
                                                           "source_episodes": new_eps})
        for ep in new_eps:
            self.records.put_edge(cites(rec.id, ep, now, instance=rec.kind == "concept"))
        for ep in evicted:  # the oldest references go, with their links
            for edge in (cites(rec.id, ep, now), cites(rec.id, ep, now, instance=True)):
                self.records.delete_edge(edge.src, edge.dst, edge.type)
        update_cooccurrence(self.records, rec.id, rec.source_episodes, now)
        self.announce_capture(rec.id, rec)
        return LearnResult(rec.id, action, [replaced.id] if replaced else [], decision.similarity)

    def _reworded(self, old: SemanticRecord, text: str, cand: Candidate, now: float) -> SemanticRecord:
        """The next version of `old` saying `text` (a merge's more specific wording): the same fact, so it
        keeps the old one's evidence, strength and lineage; valid from the candidate's time, as a
        superseding version is, so `as_of` an earlier time still shows the text known then."""
        rec = SemanticRecord.from_dict(copy.deepcopy(old.to_dict()))
        rec.id, rec.content, rec.content_key = new_id(), text, content_key(text)
        rec.embedding = cand.embedding if text == cand.content else self.embedder.embed([rec.embed_text()])[0]
        if cand.triple and text == cand.content:
            rec.object = cand.triple.object
        rec.valid_from, rec.recorded_at = cand.valid_from, now
        return rec

    def _put_version(self, rec: SemanticRecord, action: str, closed: list[SemanticRecord], now: float) -> None:
        """Write `rec` as a new record that supersedes `closed` (closed, kept, reachable by `as_of` and
        `history`); the index copies of both are announced, so the old text leaves the recall index."""
        for old in closed:
            old.valid_to, old.superseded_by, old.last_updated = max(rec.valid_from, old.valid_from), rec.id, now
        self._write_vectors([rec])
        self.records.put(rec)
        self.records.log_version(rec.id, action, now, rec.to_dict())
        for old in closed:
            self.records.put(old, reindex=False)
            self.records.log_version(old.id, "superseded", now, {"superseded_by": rec.id, "valid_to": old.valid_to})
            self.announce_capture(old.id, old)

    def restore(self, records: list[SemanticRecord], batch: int = 256) -> None:
        """Write records exactly as given (an import): no reconciliation, vectors from this embedder."""
        self.apply_touches()
        for start in range(0, len(records), batch):
            chunk = records[start : start + batch]
            for rec, vector in zip(chunk, self.embedder.embed([r.embed_text() for r in chunk]), strict=True):
                rec.embedding = vector
            with self.records.transaction():
                for rec in chunk:
                    self.records.put(rec)
                    self._note_scope(rec.tags)
            self._write_vectors(chunk)
            for rec in chunk:
                self.announce_capture(rec.id, rec)

    def _write_vectors(self, recs: list[SemanticRecord]) -> None:
        import numpy as np

        self.vectors.add([r.id for r in recs], np.stack([r.embedding for r in recs]), [r.content for r in recs],
                         [{"kind": r.kind, "name": r.name_norm} for r in recs])

    def supersede(self, old: str, new_content: str, *, valid_from: str | float | None = None,
                  visible: frozenset[str] | None = None, scope: str | None = None) -> LearnResult:
        """Replace a fact explicitly: the agent decided, so no similarity test; the old one is closed
        (the new version keeps the old one's scope). `scope`: the writer's, whose records alone it may
        replace (as `learn` and `relate` write only there): a turn answering bob read the agent's own
        facts and replaced them for everyone, in the agent's scope."""
        self.apply_touches()
        target = self.resolve(old, visible)
        if scope is not None and (owner := scopes.of_tags(target.tags)) != scopes.check(scope):
            raise ValueError(f"record {target.id} is in scope {owner!r}, which this turn (scope {scope!r}) reads but "
                             "does not change; learn the new fact to keep it in this scope")
        if not target.current:
            # the current version, not the next one: down a chain that one was superseded too, and the
            # model was sent from version to version
            now = next((r for r in self.records.by_lineage(target.lineage) if r.current), None) if target.lineage else None
            raise ValueError(f"record {target.id} is already superseded by {target.superseded_by}"
                             + (f"; its current version is {now.id}: supersede that one" if now else
                                "; the fact has no current version: learn the new one"))
        cand, extra = self._candidate(new_content, target.name or None, target.kind, target.category, target.tags, None,
                                      (), "direct_ingestion", valid_from, target.properties, None)
        with self.records.transaction():
            result = self._insert(Decision("supersede", [target]), cand, extra)
        self.vectors.maybe_flush()
        return result

    def forget(self, id_or_name: str, visible: frozenset[str] | None = None) -> list[str]:
        """Delete a record for good: every version of it (a forgotten fact must not come back through
        `history` or `as_of`), with their edges, vectors and write logs. The ids deleted."""
        self.apply_touches()
        rec = self.resolve(id_or_name, visible)
        versions = self.records.by_lineage(rec.lineage) if rec.lineage else [rec]
        return [v.id for v in versions if self.remove(v.id)]

    def retire_citing(self, episode_ids: list[str], still_says: Callable[[str, str], bool] | None = None,
                      visible: frozenset[str] | None = None) -> tuple[list[str], list[str]]:
        """After episodes were forgotten: delete the records that show what they said (facts, summaries,
        themes citing them; themes are rebuilt from what remains) and the concepts only they named (a
        name told once is what was said: "my secret lover is Horatio Plumtree"); a concept other
        episodes name too only loses the citation, and so does a fact each of whose other episodes
        still says its text (`still_says(episode id, text)`): the wifi password said in three turns
        was deleted with the first, and no later dream re-derived it from the other two, which it
        had already read. Records of scopes outside `visible` (None: every scope) are left alone.
        (deleted, updated)."""
        self.apply_touches()
        gone, wanted = [], set(episode_ids)
        updated = []
        for record_id in self.records.sharing_episodes(list(wanted)):
            rec = self.records.get(record_id)
            if rec is None or not scopes.allows(visible, rec.tags):
                continue
            kept = [e for e in rec.source_episodes if e not in wanted]
            if kept and (rec.kind == "concept" or (rec.kind == "fact" and still_says is not None
                                                   and all(still_says(e, rec.content) for e in kept))):
                self._drop_sources(rec, kept)
                updated.append(rec.id)
            elif self.remove(rec.id):
                gone.append(rec.id)
        return gone, updated

    def _drop_sources(self, rec: SemanticRecord, kept: list[str]) -> None:
        """`rec` cites only `kept` of its episodes now: their links go with them, and a fact's evidence
        (one confirmation an episode) with them."""
        dropped = [e for e in rec.source_episodes if e not in kept]
        times = dict(zip(rec.source_episodes, rec.source_times, strict=False))
        rec.source_episodes = kept
        rec.source_times = [times[e] for e in kept if e in times]
        if rec.kind == "fact":
            rec.reinforcements = max(1, rec.reinforcements - len(dropped))
            if not rec.confidence_set:
                rec.confidence = confidence_from(rec.reinforcements)
        with self.records.transaction():
            self.records.put(rec)
            for ep in dropped:
                self.records.delete_edge(rec.id, ep, "DERIVED_FROM")
                self.records.delete_edge(ep, rec.id, "INSTANCE_OF")
        self.announce_capture(rec.id, rec)  # its index copy cites the episodes it cites

    def relate(self, a: str, relation: str, b: str, weight: float | None = None, scope: str | None = None) -> Edge:
        """Link two records (ids or names; unknown names become concepts). Relating again strengthens."""
        self.apply_touches()
        if weight is not None and not 0.0 <= weight <= 1.0:
            raise ValueError(f"weight {weight} is outside [0, 1]")
        found = [self.named(ref, scope) for ref in (a, b)]  # both checked first: a refused call makes nothing
        rel, _ = self.relations.ensure(relation)
        if rel in CROSS_LAYER:
            raise ValueError(f"{rel} links layers and is written by provenance, not by relate")
        src, dst = (rec or self.records.get(self.learn(ref, name=ref, kind="concept", scope=scope).id)
                    for rec, ref in zip(found, (a, b), strict=True))
        if src.id == dst.id:
            raise ValueError(f"cannot relate {quoted(a)} to itself")
        s, d = edge_key(src.id, dst.id, rel, self.relations.is_symmetric(rel))
        now = self.clock()
        with self.records.transaction():
            edge = self.records.get_edge(s, d, rel)
            if edge is None:
                edge = Edge(s, d, rel, INITIAL_WEIGHT if weight is None else weight, created_at=now)
            else:
                edge.weight = hebbian(edge.weight) if weight is None else weight
            self.records.put_edge(edge)
        return edge

    # ------------------------------------------------------------------ layer protocol (core/layers.MemoryLayer)
    def get(self, record_id: str) -> SemanticRecord | None:
        return self.records.get(record_id)

    def remove(self, record_id: str) -> bool:
        self.apply_touches()
        rec = self.records.get(record_id)
        if rec is None or not self.records.delete(record_id):
            return False
        self.vectors.delete([record_id])
        self.announce_delete(record_id, rec)
        return True

    def stats(self) -> dict[str, Any]:
        out = self.records.summary()
        out["top_tags"] = dict(list(self.records.tag_counts().items())[:10])
        out["relation_types"] = len(self.relations.types())
        out["embedder"] = signature(self.embedder)
        return out

    def __len__(self) -> int:
        return self.records.count()

    def __iter__(self) -> Iterator[SemanticRecord]:
        return self.records.iter_records()

    def flush(self) -> None:
        """Send queued vectors to the index now (also done every `flush_every` writes and on close)."""
        self.vectors.flush()

    def close(self) -> None:
        try:
            self.apply_touches()
        finally:
            self.vectors.close()
            self.records.close()
