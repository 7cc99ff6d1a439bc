"""Forgetting, for Memory: deletion that reaches every store, index and file that shows a text (the
trace, the index, semantic records and what was derived from them, the dream's theme window, the turn
log), a whole scope at once, and per-scope retention. A mixin of Memory, kept apart by what it holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mettaclaw import turns
from mettaclaw.memory.core import scopes
from mettaclaw.memory.episodes.index import action_id, message_id, offset_of
from mettaclaw.memory.index.priors import PRIOR_KIND
from mettaclaw.textutil import quoted


class Forgetting:
    """The forgetting side of Memory (memory.py), over its stores."""

    lock: Any
    working: Any
    trace: Any
    episodes: Any
    index: Any
    semantic: Any
    statistics: Any
    dreamer: Any
    _mirror: Any
    delivered: Any
    turn_log: Path | None
    readable_episode: Callable[[str, frozenset[str] | None], Any]

    def forget(self, ref: str, visible: frozenset[str] | None = None) -> list[str]:
        """Delete what `ref` names from every store and index, so that its text does not come back
        through any query, a restart or a dream; the ids deleted (LookupError: nothing matches).

        - an episode (`ep-N`/`act-N`): the turn's rows, its trace record (erased in place), and every
          fact, summary or theme that shows what it said;
        - a memory: its row; a mirrored fact's row stands for the fact, which is forgotten;
        - a semantic record (id, name or text): every version of it; a fact takes the episodes it
          was distilled from with it, since they say the same thing.
        Knowledge priors are refused: they come back from their file at the next start."""
        with self.lock:
            offset = offset_of(ref)
            if offset is not None:
                if visible is None or self.readable_episode(ref, visible) is not None:
                    return self._forget_turns([offset], ref)
                if self.trace.has(message_id(offset)) or not self._rows_allowed(offset, visible):
                    raise LookupError(f"no episode {quoted(ref)}")  # another scope's
                # erased already, by a forget cut short: whose it was is known only from what still
                # cites it, so this reader finishes the forget within the records it may see
                return self._forget_turns([offset], ref, visible)
            row = self.index.get(ref)
            if row is not None and visible is not None and not scopes.allows(visible, row.tags):
                row = None  # another scope's memory is no memory to this reader
                if self.semantic.get(ref) is None:
                    raise LookupError(f"no record with id, name or text {quoted(ref)}")
            if row is not None and self.semantic.get(ref) is None:
                if row.kind == PRIOR_KIND:
                    raise ValueError(f"{ref} is a chunk of the knowledge prior {row.source!r}: "
                                     "edit or remove that file in knowledgePriorsDir")
                if not row.meta.get("semantic_id"):
                    gone = self._forget_memories([ref])
                    self._mirror.sync()
                    return gone
                ref = str(row.meta["semantic_id"])
            record = self.semantic.resolve(ref, visible)
            versions = [v.id for v in self.semantic.records.by_lineage(record.lineage)] if record.lineage else [record.id]
            conclusions = [c for c in self._conclusions_of(versions) if c not in versions]
            gone = self.semantic.forget(record.id)
            gone += self._forget_records(conclusions)
            self._mirror.sync()
            evidence = [o for o in map(offset_of, record.source_episodes) if o is not None] if record.kind == "fact" else []
            return gone + (self._forget_turns(sorted(set(evidence))) if evidence else [])

    def _forget_memories(self, ids: list[str]) -> list[str]:
        """Forget these memories (index rows of `remember`, not episodes): their rows in one store
        delete, their text in the `remember` of the turns that stored them, and the inferences drawn
        from them; the ids deleted. Retention evicts memories through here too: it dropped only the
        row, and the evicted text stayed in its turn's trace record (HISTORY, `episodes`, export) and
        in the turn log, while an evicted episode was erased from both."""
        rows = [row for row in map(self.index.get, ids) if row is not None]
        conclusions = self._conclusions_of([row.id for row in rows])
        gone = self.index.forget_many([row.id for row in rows])
        self._forget_remembering([(row.text, scopes.of_tags(row.tags)) for row in rows])
        return gone + self._forget_records(conclusions)

    def _conclusions_of(self, premises: list[str]) -> list[str]:
        """The agent's inferences drawn from these premises (keep_inference links each DERIVED_FROM to
        them): their proof trails quote the premises' beliefs, so a forgotten premise's text stayed in
        them (the inspector's trail, the export) with a link to nothing."""
        found = []
        for premise in premises:
            for edge in self.semantic.records.edges_of(premise):
                if edge.type == "DERIVED_FROM" and edge.dst == premise and (
                        (rec := self.semantic.get(edge.src)) is not None and rec.provenance == "agent_inference"):
                    found.append(rec.id)
        return list(dict.fromkeys(found))

    def _forget_records(self, ids: list[str]) -> list[str]:
        """Forget these semantic records (each with its versions), those still there."""
        return [g for i in ids if self.semantic.get(i) is not None for g in self.semantic.forget(i)]

    def forget_scope(self, scope: str) -> int:
        """Forget everything of one scope (its episodes, memories, records and what was derived from
        them, and its pin: each person's is a file of their own, shown in their next prompt, and it
        outlived the rest) in one call; how many ids were deleted."""
        wanted = frozenset({scopes.check(scope)})
        with self.lock:
            self.working.pin("", scopes.check(scope))
            rows = self.index.ids_by(scopes=wanted)
            offsets = sorted({o for o in map(offset_of, rows) if o is not None})
            gone = self._forget_turns(offsets) if offsets else []
            held = [row_id for row_id in sorted(rows - set(gone))
                    if (row := self.index.get(row_id)) is not None and row.kind not in (PRIOR_KIND, "derived")]
            gone += self.index.forget_many(held)
            self.statistics.forget_scope(scopes.check(scope))
            while found := self.semantic.recall(1000, mode="logical", visible=wanted, include_history=True, touch=False):
                for record in found:
                    if self.semantic.get(record.id) is not None:
                        gone += self.semantic.forget(record.id)
            self._mirror.sync()
            return len(set(gone))

    def evict(self, policies: dict[str, Any], now: float) -> list[str]:
        """Apply per-scope retention (`scopePolicies`: ttlDays, maxEntries; see retention.py)."""
        from .retention import evict

        with self.lock:
            gone = evict(self, policies, now)
            self._mirror.sync()
            if self.dreamer is not None:
                self.dreamer.save_erasures()
            return gone

    def _forget_remembering(self, memories: list[tuple[str, str]]) -> None:
        """A forgotten memory's text (each of `memories`: its text and scope) also stands in the
        `remember` of each turn of its scope that stored it: taken out of those trace records (HISTORY,
        `episodes`) and those turns' log lines. Every record is looked at: the turn was looked for by
        the memory's time, the second the remember ran, so a turn recorded in a later second (its other
        commands took the time) and every earlier turn that stored it (remembering it again moves its
        time) kept it. One pass over the trace for all of them: retention evicts many at once."""
        from mettaclaw.reasoning.atoms import AtomError, stored_text

        said: dict[str, set[str]] = {}
        for text, scope in memories:
            said.setdefault(scope, set()).add(text.strip())
        if not said:
            return

        def stored(scope: str) -> Callable[[Any], bool]:
            def test(command: Any) -> bool:
                """Whether this command stored a forgotten text: a belief is stored as its atom's text,
                which is not the model's words (`(stv 1 0.9)` became `(stv 1.0 0.9)`), so its remember kept them."""
                if command.skill != "remember":
                    return False
                try:
                    return stored_text(" ".join(command.args)) in said[scope]
                except AtomError:
                    return False
            return test

        # a word of letters each stored text and the model's words share (a belief's numbers are
        # written anew: 1 became 1.0), to skip the records that cannot hold one
        words = {max(re.findall(r"[^\W\d_]+", text), key=len, default="") for texts in said.values() for text in texts}
        for episode in self.trace.holding("remember", *sorted(words)):
            scope = scopes.of_episode(episode.who, episode.channel)
            if scope in said and self.trace.redact(episode.id, stored(scope)):
                self.erase_turn_log([message_id(episode.offset), action_id(episode.offset)])

    def erase_turn_log(self, episode_ids: list[str]) -> None:
        """The turn log's lines of these episodes keep only the turn's number and time (turns.erase):
        it shows what each turn said, so whatever erases a turn's record erases them too."""
        if self.turn_log is not None and episode_ids:
            turns.erase(self.turn_log, episode_ids)

    def _still_says(self, episode_id: str, text: str) -> bool:
        """Whether an episode says `text` in these words (a dream fact leads it with who said it)."""
        episode = self.trace.get(episode_id)
        if episode is None:
            return False
        bodies = [text, *(text[len(who) + 2:] for who in episode.who if text.startswith(who + ": "))]
        return any(body and body in episode.message for body in bodies)

    def _rows_allowed(self, offset: int, visible: frozenset[str]) -> bool:
        """Whether a reader of the `visible` scopes may see every index row left of this turn."""
        rows = (self.index.get(f(offset)) for f in (message_id, action_id))
        return all(scopes.allows(visible, row.tags) for row in rows if row is not None)

    def _forget_turns(self, offsets: list[int], asked: str | None = None,
                      visible: frozenset[str] | None = None) -> list[str]:
        """Erase these turns and everything that shows them. Every step runs even for a turn whose
        record is erased already: a forget cut short by a crash (the trace record erased, what the
        dream distilled from it not yet retired) is finished by asking again, which used to be refused
        as "no episode" and left the turn's words in summaries, themes and the turn log for good.
        `visible` (a scoped reader finishing such a forget): only records of these scopes are retired,
        and only they are answered, since the erased record no longer says whose the turn was."""
        erased_before = [o for o in offsets if not self.trace.has(message_id(o))]
        gone = self.episodes.erase_many(offsets)
        cited = [f(o) for o in offsets for f in (message_id, action_id)]
        if self.dreamer is not None:
            for offset in erased_before:  # their sentences may still be in the theme window
                self.dreamer.on_episode_erased(message_id(offset), None)
        self.erase_turn_log(cited)
        if self.delivered is not None:  # the key and digest its sender gave it (delivery.py)
            self.delivered.forget_turns(set(offsets))
        self.statistics.forget_episodes(set(cited))
        retired, _ = self.semantic.retire_citing(cited, self._still_says, visible)
        self._mirror.sync()
        if self.dreamer is not None:
            self.dreamer.save_erasures()  # their sentences left the dream's theme window
        if asked is not None and not gone and not retired:
            raise LookupError(f"no episode {quoted(asked)}")
        return gone + retired
