"""The memory tools other agents call over MCP, each a typed function over one `Memory`.

Why plain functions with annotated parameters: the MCP SDK builds each tool's JSON schema from them,
so the schema, the one-line description (the docstring's first line) and the code cannot drift apart.
Every tool answers a JSON object. A caller's mistake raises `ToolError` with the cause, which the SDK
sends back as an MCP tool error; anything else is a bug and reaches the SDK's own error path.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import AfterValidator, BaseModel, Field

from mettaclaw.memory import (
    KINDS,
    MAX_TAG_CHARS,
    LocalMemoryAPI,
    SemanticRecord,
    check_time,
    format_time,
    is_time_prefix,
    scopes,
    senders,
)
from mettaclaw.messages import Message
from mettaclaw.parser import Command
from mettaclaw.sexpr import is_symbol
from mettaclaw.skills import SkillError
from mettaclaw.skills.memory import SKILLS, MemorySkills, remember_text

Ref = Annotated[str, Field(description="a record's id, a concept's name, or a fact's exact text", min_length=1)]
Limit = Annotated[int, Field(ge=1, le=200, description="at most this many results")]
Text = Annotated[str, Field(min_length=1)]
Tags = list[Annotated[str, Field(max_length=MAX_TAG_CHARS)]] | None  # (the memory checks it too)
Time = Annotated[str, Field(pattern=r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", description="YYYY-MM-DD HH:MM:SS")]
# A number a caller sends must be finite: a NaN failed the 0-1 check as "less than or equal to 1", and
# a NaN or infinite duration was kept in the trace and averaged into the statistics
Share = Annotated[float | None, Field(ge=0, le=1, allow_inf_nan=False)]


def _record(rec: SemanticRecord) -> dict[str, Any]:
    """A semantic record as JSON: what it says, how sure, when it held, where it came from. Its tags are
    its writer's, without the scope's reserved one: the server's scope is said by `stats`, and tags
    written back as shown were refused as reserved."""
    return {"id": rec.id, "content": rec.content, "kind": rec.kind, "name": rec.name, "category": rec.category,
            "tags": scopes.user_tags(rec.tags), "confidence": round(rec.confidence, 4), "current": rec.current,
            "valid_from": _iso(rec.valid_from), "valid_to": _iso(rec.valid_to), "superseded_by": rec.superseded_by,
            "source_episodes": list(rec.source_episodes), "atom": rec.atom}


def _iso(t: float | None) -> str | None:
    return None if t is None else format_time(t)


class MemoryTools:
    """The tools, bound to one memory; `source` is what writes made through them are recorded as."""

    def __init__(self, memory: LocalMemoryAPI, source: str = "mcp", scope: str = scopes.DEFAULT,
                 lenses: dict[str, Any] | None = None) -> None:
        self.memory, self.source, self.scope, self.lenses = memory, source, scopes.check(scope), dict(lenses or {})
        self.visible = scopes.reading(self.scope, with_agent=self.scope == scopes.DEFAULT)  # its scope only

    def tools(self) -> list[Callable[..., dict[str, Any]]]:
        return [self.create_entity, self.create_relation, self.semantic_recall, self.spread_activation,
                self.supersede_fact, self.remember, self.query, self.episodes, self.history, self.forget,
                self.list_tags, self.stats, self.infer, self.agent_turn, self.agent_skill, self.agent_knowledge,
                self.agent_predictions]

    def _acting_in(self, scope: str) -> str:
        """The scope an agent's call acts in: any, on a server of the agent's own scope (its token opens
        the agent's whole memory); on a server of one scope only that one."""
        try:
            name = scopes.check(scope)
        except ValueError as err:
            raise ToolError(str(err)) from None
        if self.scope != scopes.DEFAULT and name != self.scope:
            raise ToolError(f"this server serves scope {self.scope!r} only, not {name!r}")
        return name

    def _reading(self, scope: str) -> frozenset[str]:
        """What an agent's call acting in `scope` may read: on the agent's server its scope and the
        agent's own (a remote agent answering bob sees bob's memory and its own, as a local one does);
        on a server of one scope that scope alone, so its token never opens the agent's memory."""
        return scopes.reading(self._acting_in(scope), with_agent=self.scope == scopes.DEFAULT)

    @staticmethod
    def _real_time(time: str) -> str:
        """An agent's clock reading, refused unless it is a real date and time: the pattern lets
        2026-02-30 through, and a turn recorded at a time no reader can parse back stopped the memory
        folder from opening (check_time)."""
        try:
            return check_time(time)
        except ValueError as err:
            raise ToolError(f"{err}; refused before anything was written") from None

    @staticmethod
    def _semantic_write(write: Callable[[], Any]) -> Any:
        """A write to semantic memory (`Memory.facts` locks and mirrors it), the caller's mistake a ToolError."""
        try:
            return write()
        except (ValueError, LookupError) as err:
            raise ToolError(str(err)) from None

    # --- semantic memory
    def create_entity(self, content: Text,
                      name: Annotated[str | None, Field(description="a short name to refer to it by")] = None,
                      kind: Annotated[Literal[KINDS], Field(description="what sort of record")] = "fact",  # type: ignore[valid-type]
                      category: str | None = None, tags: Tags = None,
                      confidence: Share = None) -> dict[str, Any]:
        """Store a fact, concept or other semantic record; a near-duplicate reinforces or merges instead."""
        result = self._semantic_write(lambda: self.memory.facts.learn(
            content, name=name, kind=kind, category=category, tags=tags or (), confidence=confidence, scope=self.scope))
        return {"id": result.id, "action": result.action, "superseded": result.superseded,
                "similarity": result.similarity}

    def create_relation(self, source: Ref, relation: Annotated[str, Field(min_length=1, description="e.g. likes, part_of")],
                        target: Ref, weight: Share = None) -> dict[str, Any]:
        """Link two records with a typed edge (an unknown name becomes a concept, an unknown id is an error); relating again strengthens it."""
        edge = self._semantic_write(lambda: self.memory.facts.relate(source, relation, target, weight, scope=self.scope))
        return {"source": edge.src, "relation": edge.type, "target": edge.dst, "weight": round(edge.weight, 4)}

    def semantic_recall(self, query: Text, limit: Limit = 10,
                        mode: Literal["semantic", "logical", "hybrid"] = "semantic",
                        tags_all: Tags = None, tags_any: Tags = None, tags_none: Tags = None,
                        kind: list[str] | None = None,
                        min_confidence: Share = None,
                        as_of: Annotated[str | None, Field(description="YYYY-MM-DD[ HH:MM:SS]: what held then")] = None,
                        explain: Annotated[bool, Field(description="add each result's score parts")] = False,
                        ) -> dict[str, Any]:
        """Semantic records ranked by similarity, ACT-R activation and retrievability, with filters; none below `query`'s relevance floor (mode logical: by filters alone)."""
        try:
            found = self.memory.facts.recall(query, limit, mode=mode, tags_all=tags_all or (), tags_any=tags_any or (),
                                             tags_none=tags_none or (), kind=kind, min_confidence=min_confidence,
                                             as_of=as_of, explain=explain, visible=self.visible)
        except (ValueError, LookupError) as err:
            raise ToolError(str(err)) from None
        return {"results": [{**_record(r.record), "score": round(r.score, 4),
                             **({"parts": {k: round(v, 4) for k, v in r.parts.items()}} if r.parts else {})}
                            for r in found if r.record is not None]}

    def spread_activation(self, source: Ref, limit: Limit = 5) -> dict[str, Any]:
        """What one record or episode (ep-N) activates through the graph, grouped by layer (semantic, longterm, episodic)."""
        try:
            start, _, grouped = self.memory.spread(source, self.visible)
        except LookupError as err:
            raise ToolError(str(err)) from None
        return {"source": start, "layers": {layer: [{"id": node, "activation": round(act, 4),
                                                      "text": self.memory.text_of(node)} for node, act in found[:limit]]
                                             for layer, found in grouped.items()}}

    def supersede_fact(self, old: Ref, new_content: Text,
                       valid_from: Annotated[str | None, Field(description="when the new fact began to hold")] = None,
                       ) -> dict[str, Any]:
        """Replace a fact with a new version: the old one is closed (valid_to) and kept in its history."""
        result = self._semantic_write(lambda: self.memory.facts.supersede(old, new_content, valid_from=valid_from,
                                                                              visible=self.visible))
        return {"id": result.id, "superseded": result.superseded}

    def history(self, ref: Ref) -> dict[str, Any]:
        """Every version of a fact, oldest first, with the time each held."""
        try:
            versions = self.memory.facts.history(ref, self.visible)
        except LookupError as err:
            raise ToolError(str(err)) from None
        return {"versions": [_record(v) for v in versions]}

    def list_tags(self) -> dict[str, Any]:
        """Every tag on semantic records with how many records carry it."""
        return {"tags": self.memory.facts.tags(self.visible)}

    # --- the agent's memory as a whole
    def remember(self, text: Text, tags: Tags = None) -> dict[str, Any]:
        """Store a text in long-term memory, searchable at once; a belief `(--> a b) (stv f c)` feeds `infer`."""
        try:
            result, atom = remember_text(self.memory, text, format_time(time.time()), self.source,
                                         tuple(tags or ()), scope=self.scope)
        except (SkillError, ValueError) as err:
            raise ToolError(str(err)) from None
        return {"id": result.id, "created": result.created, "belief": atom}

    def query(self, phrase: Text, limit: Limit = 10,
              layer: Annotated[Literal["episodic", "semantic"] | None,
                               Field(description="only what was said and done, or only facts; both when empty")] = None,
              explain: bool = False,
              lens: Annotated[str | None, Field(description="a lens (saved filters) from the server's config")] = None,
              ) -> dict[str, Any]:
        """The agent's own recall: episodes, memories and facts fused into one ranking, best first."""
        if lens is not None and lens not in self.lenses:
            raise ToolError(f"no lens named {lens!r}; lenses: {', '.join(sorted(self.lenses)) or 'none configured'}")
        try:
            hits = self.memory.query(phrase, limit, layer=layer, explain=explain, visible=self.visible,
                                     lens=self.lenses.get(lens) if lens else None)
        except ValueError as err:  # a blank query, or one past text.MAX_QUERY_CHARS
            raise ToolError(str(err)) from None
        return {"results": [{k: v for k, v in dataclasses.asdict(hit).items() if k != "shows" and (v or k == "score")}
                            for hit in hits]}

    def episodes(self, when: Annotated[str, Field(pattern=r"^\d{4}(-\d\d(-\d\d( \d\d(:\d\d(:\d\d)?)?)?)?)?$",
                                                  description="YYYY-MM-DD HH:MM:SS or a prefix of it")],
                 lines: Annotated[int, Field(ge=1, le=1000)] = 20) -> dict[str, Any]:
        """The trace records (what was said and done) around a time."""
        if not is_time_prefix(when):  # the pattern lets 2026-02-30 and 99:99 through; the skill refuses them
            raise ToolError(f"time {when!r} is not on the calendar")
        found = self.memory.around(when, lines, self.visible)
        return {"episodes": [{"id": e.id, "time": e.time, "text": e.text} for e in found]}

    def forget(self, ref: Ref) -> dict[str, Any]:
        """Delete a record (a fact by id, name or text; a memory or episode by id) from every store and index."""
        try:
            return {"forgotten": self.memory.forget(ref, self.visible)}
        except (LookupError, ValueError) as err:  # ValueError: a knowledge prior's chunk, which its file brings back
            raise ToolError(str(err)) from None

    def stats(self) -> dict[str, Any]:
        """How much this scope holds, by tier, and which embedder the memory was built with."""
        return {"scope": self.scope, **self.memory.stats(self.visible)}

    def infer(self, question: Annotated[str, Field(min_length=1, description=(
            'a question ("is sam mortal?") or beliefs like (--> sam human) (stv 1.0 0.9)'))],
              ) -> dict[str, Any]:
        """NAL/PLN chaining over stored beliefs that match the question, with the proof trail of each conclusion."""
        from mettaclaw.skills.reasoning import infer_skill

        try:
            return {"answer": infer_skill(question, lambda q, n: self.memory.beliefs(q, n, self.visible))}
        except SkillError as err:
            raise ToolError(str(err)) from None

    # --- for agents whose memory this server is (memoryServer=URL; memory/remote.py)
    def agent_turn(self, time: Time,
                   messages: list[TurnMessage], commands: list[TurnCommand],
                   errors: str | None = None,
                   key: Annotated[str | None, Field(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")] = None,
                   ) -> dict[str, Any]:
        """Record an agent's turn (what it was told and did, how each command ended) as episodes, searchable when this returns.
        A turn sent again with the same `key` (its answer was lost) is answered as the first time, not recorded twice; another turn under a used key is refused, and so is any under the key of a turn forgotten since."""
        self._real_time(time)
        told = [Message(m.text, m.who, m.channel) for m in messages]
        # the scope the episodes will have, as the index decides it from the record: checking each
        # message let a turn without messages (its commands only: the agent's own) into the agent's scope
        whose = scopes.of_episode(*senders(told))
        if self.scope != scopes.DEFAULT and whose != self.scope:
            raise ToolError(f"this server serves scope {self.scope!r} only, and this turn's episodes would be "
                            f"{whose!r}: a turn is {self.scope!r}'s when its messages are theirs on a shared "
                            "channel (irc:...); one without messages is the agent's own")
        try:
            record = self.memory.record_turn(time, told, [Command(c.skill, tuple(c.args)) for c in commands], errors,
                                             [(c.status, c.ms) for c in commands] if all(c.ms is not None for c in commands) else [],
                                             key=key, key_scope=self.scope)
        except ValueError as err:  # the key given to another turn
            raise ToolError(str(err)) from None
        return {"turn_id": record.turn_id, "episode_ids": record.episode_ids, "message_ids": record.message_ids}

    def agent_skill(self, skill: Literal[tuple(SKILLS)],  # type: ignore[valid-type]
                    arg: str, time: Time,
                    scope: str = scopes.DEFAULT, max_items: Limit = 10,
                    max_lines: Annotated[int, Field(ge=1, le=1000)] = 20,
                    asker: Annotated[str | None, Field(max_length=64)] = None) -> dict[str, Any]:
        """Run one of an agent's memory skills (query, remember, learn, ...) as that agent, in a scope;
        `asker`: who the turn answers, whose own statements a question about themselves finds first."""
        self._real_time(time)
        skills = MemorySkills(self.memory, lambda: time, max_items, max_lines, source="agent", lenses=self.lenses)
        skills.scope, skills.with_agent = self._acting_in(scope), self.scope == scopes.DEFAULT
        skills.asker = asker
        try:
            return {"result": skills.run(skill, arg)}
        except SkillError as err:
            raise ToolError(str(err)) from None

    def agent_predictions(self, context: str, recent: list[TurnCommand],
                          time: Time,
                          scope: str = scopes.DEFAULT, messages: list[str] | None = None) -> dict[str, Any]:
        """The PREDICTIONS block an agent's prompt shows: how the actions it names, and those done for
        earlier requests meaning the same as its `messages` (as shown, `who: text`), ended before."""
        self._real_time(time)
        return {"block": self.memory.predictions(context, [Command(c.skill, tuple(c.args)) for c in recent], time,
                                                 self._reading(scope), messages or [])}

    def agent_knowledge(self, message: str, budget: Annotated[int, Field(ge=0, le=100_000)],
                        scope: str = scopes.DEFAULT,
                        budget_ms: Annotated[float | None, Field(gt=0, le=10_000, allow_inf_nan=False)] = None,
                        ) -> dict[str, Any]:
        """The KNOWLEDGE block an agent's prompt shows for a new message ("" when nothing is known)."""
        return {"block": self.memory.knowledge(message, budget, self._reading(scope), budget_ms)}


def _one_symbol(skill: str) -> str:
    """A command's skill as the trace can write it: the trace writes it unquoted, so `x)\n("...` ended
    the record and wrote one of the sender's choosing (another person's, in their scope) after it."""
    if not is_symbol(skill):
        raise ValueError(f"skill {skill[:60]!r} is not a skill name: one word without whitespace, ( ) or \"")
    return skill


def _channel_as_written(channel: str) -> str:
    """A channel the trace reads back as written: it is the text after the last ` (` of the record's
    FROM item, so `irc:#r (x` read back as channel `x` and put bob's turn in the agent's own scope."""
    if " (" in channel:
        raise ValueError(f"channel {channel[:60]!r} holds ' (', which the trace cannot read back")
    return channel


class TurnMessage(BaseModel):
    text: str
    who: str | None = None
    channel: Annotated[str, AfterValidator(_channel_as_written)] = "terminal"


class TurnCommand(BaseModel):
    skill: Annotated[str, AfterValidator(_one_symbol)]
    args: list[str] = []
    status: int = 0  # 0 done, >0 a shell exit status, -1 an error
    ms: Annotated[float | None, Field(ge=0, allow_inf_nan=False)] = None
