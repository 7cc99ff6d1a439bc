"""The memory skills (remember, query, episodes, forget, learn, relate, recall, supersede, history, infer,
dream, spread): each declared once, by `memory_skill` on its method of MemorySkills, over one memory.

Every error the model caused raises SkillError with its cause (bridges.error_text writes it out). The
same MemorySkills run a remote agent's skills on its memory server (mcp/tools.py `agent_skill`);
RemoteSkills is that agent's side.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from typing import Any, TypeVar, cast

from mettaclaw.memory import (
    MAX_HIT_CHARS,
    MAX_SECTION,
    LocalMemoryAPI,
    MemoryAPI,
    RemoteMemory,
    ServerRefused,
    ServerUnavailable,
    StoreDamaged,
    is_time_prefix,
    render,
    scopes,
)
from mettaclaw.reasoning.atoms import AtomError, looks_like_belief, stored_text
from mettaclaw.sexpr import without_comments
from mettaclaw.skills import SkillError, semantic
from mettaclaw.skills.reasoning import KEEP, KEEP_CONFIDENCE, infer_skill
from mettaclaw.skills.registry import Skill, SkillHost, SkillRegistry
from mettaclaw.textutil import cap_head, quoted

log = logging.getLogger(__name__)
MODE_PREFIX = re.compile(r"^\s*(?:mode=)?(semantic|episodic|hybrid)\s*(?::\s*|\s+)", re.IGNORECASE)
LENS_PREFIX = re.compile(r"^lens:(\S+)\s*")
LATEST = "9999"  # a time after every record: `episodes` around it shows the last ones
MAX_MEMORY_CHARS = MAX_SECTION  # one memory is found by one vector of its opening words: past a knowledge-prior
# section's size it is a document, which `write-file` or knowledge-priors/ (split by heading) keep better


F = TypeVar("F", bound=Callable[..., str])


def memory_skill(name: str, args: str, help_text: str, operation: str, optional: bool = False) -> Callable[[F], F]:
    """Declare the method below as the memory skill `name` (what the model reads, its MeTTa operation);
    its Python side is the agent's memory skills' `run(name, ...)` (MemorySkills, or RemoteSkills)."""
    skill = Skill(name, args, help_text, operation, functools.partial(_bound, name), optional, source=__name__)

    def declare(method: F) -> F:
        method.skill = skill  # type: ignore[attr-defined]
        return method

    return declare


def _bound(skill: str, host: SkillHost) -> Callable[[str], str]:
    return functools.partial(host.memory_skills.run, skill)


def remember_text(memory: Any, text: str, time: str, source: str, tags: Any = (),
                  scope: str = scopes.DEFAULT) -> tuple[Any, str | None]:
    """Store `text` in long-term memory (the agent's `remember` and the MCP tool): a belief such as
    `(--> sam human) (stv 1.0 0.9)` is kept as an atom for reasoning. The store's result and the atom."""
    text = text.strip()
    if not text:
        raise SkillError("nothing to remember (empty text)")
    if len(text) > MAX_MEMORY_CHARS:
        raise SkillError(f"not stored: {len(text):,} characters, at most {MAX_MEMORY_CHARS:,} in one memory (it is found "
                         f"by one vector and a query shows its first {MAX_HIT_CHARS:,}); remember the point, and keep the "
                         "document with write-file or as Markdown in knowledge-priors/, which is split by heading")
    atom, kind = None, "memory"
    if looks_like_belief(text):
        try:
            atom, kind = stored_text(text), "belief"
        except AtomError as err:
            raise SkillError(f"not stored: the belief is malformed: {err}") from None
    try:
        result = memory.remember(atom or text, time=time, source=source, kind=kind, atom=atom, tags=tags, scope=scope)
    except ValueError as err:
        raise SkillError(f"not stored: {err}") from None
    return result, atom


class MemorySkills:
    def __init__(self, memory: LocalMemoryAPI, now: Callable[[], str], max_items: int, max_episode_lines: int = 20,
                 source: str = "agent", lenses: dict[str, Any] | None = None) -> None:
        self.memory, self.now, self.max_items, self.lenses = memory, now, max_items, dict(lenses or {})
        self.max_episode_lines, self.source = max_episode_lines, source
        self.scope = scopes.DEFAULT  # whose turn it is (the runtime sets it from who spoke): writes go there
        # whether a turn also reads the agent's own scope: the agent's does; a memory server of one
        # scope sets False, since it serves that scope only (docs/memory.md: "An MCP server sees its one scope")
        self.with_agent = True
        # the channel's own scope, where turns in which several people spoke go: said in front of
        # everyone there, so each of them reads it (the runtime sets it from the turn's channel)
        self.shared: frozenset[str] = frozenset()
        # who asks: the one person who spoke in the turn being answered (None when several did); a
        # question about themselves ("my password") ranks their own statements first (RecallPipeline.run)
        self.asker: str | None = None

    @property
    def visible(self) -> frozenset[str]:
        """What this turn may read: its scope, the channel's shared one and (with_agent) the agent's own."""
        return scopes.reading(self.scope, self.with_agent) | self.shared

    def run(self, skill: str, arg: str) -> str:
        """Run one memory skill by its name in SKILLS (the bridges and the memory server's
        `agent_skill` tool both come through here, so a remote agent's skills are these)."""
        if skill not in SKILLS:
            raise SkillError(f"no memory skill {skill!r}; memory skills: {', '.join(SKILLS)}")
        run: Callable[[str], str] = getattr(self, SKILLS[skill])
        try:
            return run(arg)
        except StoreDamaged as err:  # said to the model (and the log) as it is: the turn goes on without it
            log.error("memory skill %s: %s", skill, err)
            raise SkillError(str(err)) from err

    # --- long-term memory and episodes
    @memory_skill("remember", "TEXT", "store TEXT in long-term memory with time and source; a belief "
                  "`(--> a b) (stv f c)` is kept as an atom for reasoning", "memory-remember")
    def remember(self, text: str) -> str:
        result, atom = remember_text(self.memory, text, self.now(), self.source, scope=self.scope)
        stored = "REMEMBER-SUCCESS" if result.created else "REMEMBER-SUCCESS (already known; refreshed)"
        # a comment is no part of a belief, as in MeTTa: said, so a note the model meant to keep is not lost unseen
        dropped = " (its comment after ';' is not stored)" if atom and without_comments(text).strip() != text.strip() else ""
        return f"{stored} {result.id}" + (f" belief {atom}{dropped}" if atom else "")

    @memory_skill("query", "PHRASE", "recall the long-term memories best matching PHRASE, best first, with their "
                  "time; `query semantic: PHRASE` or `query hybrid: PHRASE` searches facts too; `query lens:NAME "
                  "PHRASE` uses a lens from the config", "memory-query", optional=True)
    def query(self, phrase: str) -> str:
        """`query PHRASE`: everything the agent remembers, best first; `query episodic: PHRASE` what was
        said and done (and remembered), `query semantic: PHRASE` facts, summaries and themes;
        `query lens:NAME PHRASE` through a lens of the config (`lenses`)."""
        phrase = phrase.strip()
        lens = None
        if named := LENS_PREFIX.match(phrase):
            lens = self.lenses.get(named[1])
            if lens is None:
                known = ", ".join(sorted(self.lenses)) or "none are configured (setting `lenses`)"
                raise SkillError(f"no lens named {quoted(named[1])}; lenses: {known}")
            phrase = phrase[named.end():]
        mode = MODE_PREFIX.match(phrase)
        layer = None
        if mode:
            phrase, layer = phrase[mode.end():], None if mode[1].lower() == "hybrid" else mode[1].lower()
        if not phrase:
            raise SkillError("query needs a phrase to look for, e.g. query where does Alice live")
        try:
            hits = self.memory.query(phrase, self.max_items, layer=layer, visible=self.visible, lens=lens,
                                     asker=self.asker)
        except ValueError as err:  # what recall refuses to look for (a query past text.MAX_QUERY_CHARS)
            raise SkillError(str(err)) from None
        return render(hits) or f"no memories match {quoted(phrase)}"

    @memory_skill("episodes", "TIME", "show the trace records around TIME (YYYY-MM-DD HH:MM:SS or a prefix of it); "
                  "`episodes` alone shows the latest", "trace-around", optional=True)
    def episodes(self, when: str) -> str:
        """`episodes TIME`: the trace around TIME; `episodes` alone: the latest records (what a model
        that lost track of the time asks for)."""
        when = when.strip() or LATEST
        if when != LATEST and not is_time_prefix(when):
            raise SkillError(f"time {quoted(when)} is not YYYY-MM-DD HH:MM:SS (or a prefix of it) on the calendar")
        if when == LATEST:  # the turns written last, not those of the latest time: the clock may have gone back
            found = self.memory.latest(self.max_episode_lines, self.visible)
        else:
            found = self.memory.around(when, self.max_episode_lines, self.visible)
        return "\n".join(cap_head(e.text, MAX_HIT_CHARS, "record") for e in found) or "no episodes recorded yet"

    @memory_skill("forget", "ID", "delete a record for good from every store: a fact (id, name or text; with every "
                  "version and the episodes it came from), a memory, or an episode (ep-N) with what was derived "
                  "from it", "memory-forget")
    def forget(self, ref: str) -> str:
        """`forget ID`: the record and everything that shows its text, from every store (Memory.forget)."""
        try:
            gone = self.memory.forget(ref.strip(), self.visible)
        except (ValueError, LookupError) as err:
            raise SkillError(str(err)) from None
        return f"FORGET-SUCCESS {', '.join(gone)}"

    # --- semantic memory (`Memory.facts` locks and brings the index's copies of what changed in line)
    @memory_skill("learn", "FACT", "store a fact in semantic memory (`learn concept NAME: definition` for a concept; "
                  "#tags, category=C); a paraphrase reinforces the old record, a changed fact supersedes it",
                  "semantic-learn")
    def learn(self, arg: str) -> str:
        return semantic.learn(self.memory.facts, arg, scope=self.scope,
                              citable=lambda ref: self.memory.readable_episode(ref, self.visible) is not None)

    @memory_skill("relate", "TEXT", "link two names or ids with a typed relation: `relate coffee mug IS_A container "
                  "[weight=0.5]`; relating again strengthens the link (IS_A HAS_PART PART_OF CAUSES USES PRODUCES "
                  "REQUIRES SIMILAR_TO PREDICTS RELATED_TO, or a new one in capitals)", "semantic-relate")
    def relate(self, arg: str) -> str:
        return semantic.relate(self.memory.facts, arg, scope=self.scope)

    @memory_skill("supersede", "TEXT", "replace a fact that is no longer true: `supersede OLD-ID-OR-NAME => new "
                  "fact`; the old version stays in history", "semantic-supersede")
    def supersede(self, arg: str) -> str:
        return semantic.supersede(self.memory.facts, arg, scope=self.scope, visible=self.visible)

    @memory_skill("history", "ID", "every version of a fact, oldest first, with when each was valid",
                  "semantic-history")
    def history(self, arg: str) -> str:
        return semantic.history(self.memory.facts, arg, scope=self.scope, visible=self.visible)

    @memory_skill("recall", "QUERY", "search memory by meaning: `recall semantic: Q` facts and concepts (default), "
                  "`recall episodic: Q` what happened, `recall hybrid: Q` both; #tag, -#tag, kind=, category=, "
                  "as_of=YYYY-MM-DD filter; limit=N shows up to N (10 unless said)", "semantic-recall")
    def recall(self, arg: str) -> str:
        """`recall`: the semantic layer's own search (filters, as_of, ACT-R scores); `recall episodic:` and
        `recall hybrid:` add what was said and done."""
        def episodic(query: str, limit: int) -> list[tuple[str, str, str]]:
            return [(h.time, h.text, h.id) for h in self.memory.query(query, limit, layer="episodic", visible=self.visible)]

        return semantic.recall(self.memory.facts, arg, episodic=episodic, scope=self.scope, visible=self.visible)

    # --- dreaming and spreading activation
    @memory_skill("dream", "ARG", "consolidate recent episodes into facts and concepts in the background (`dream` or "
                  "`dream now`); `dream status` shows its progress or the last report", "dream-run", optional=True)
    def dream(self, arg: str) -> str:
        from mettaclaw.skills.dream import dream_skill

        if not self.with_agent and arg.strip().lower() not in ("", "now", "start"):
            # a dream goes over every scope (each record stays in its own), so its report counts and
            # names what other scopes hold: a server of one scope may start dreams, not read them
            raise SkillError("the dream's report covers every scope; a memory server of one scope can start "
                             "a dream (`dream`) but not read its report")
        shown = dream_skill(self.memory.dreamer, arg)
        return shown.split("\n", 1)[0] if not self.with_agent else shown

    @memory_skill("spread", "ID", "spreading activation from a fact or concept (id or name) or an episode (ep-N) "
                  "across memory layers, grouped by layer", "memory-spread")
    def spread(self, arg: str, limit: int = 5) -> str:
        """`spread <id or name>`: what one record (or episode) activates in each layer."""
        ref = (arg or "").strip()
        if not ref:
            raise SkillError("give a record id or name, or an episode id, e.g. spread coffee mug or spread ep-12")
        try:
            source, text, grouped = self.memory.spread(ref, self.visible)
        except LookupError as err:
            raise SkillError(str(err)) from None
        if not grouped:
            return f"SPREAD: {source} ({text[:60]}) has no links yet"
        out = [f"SPREAD from {source} ({text[:60]}):"]
        for layer, found in grouped.items():
            shown = []
            for node, act in found[:limit]:
                text = self.memory.text_of(node)
                shown.append(f"{node}{' ' + repr(text[:50]) if text else ''} ({act:.2f})")
            out.append(f"  {layer}: " + "; ".join(shown))
        return "\n".join(out)

    # --- reasoning
    @memory_skill("infer", "QUESTION", f"chain NAL/PLN up to 3 steps over the beliefs you remembered (remember "
                  f"`(--> cat animal) (stv 1 0.9)`) and list the strongest conclusions with their proof trail; its "
                  f"best (up to {KEEP}, confidence at least {KEEP_CONFIDENCE}) are kept as facts, found by `query`",
                  "reason-infer")
    def infer(self, arg: str) -> str:
        return infer_skill(arg, lambda phrase, limit: self.memory.beliefs(phrase, limit, self.visible),
                           keep=lambda statement, belief, trail, premises: self.memory.keep_inference(
                               statement, belief, trail, premises, self.scope))


# each memory skill, by name, with the MemorySkills method that runs it, in declaration order
_DECLARED: dict[str, tuple[Skill, str]] = {s.name: (s, method) for method, m in vars(MemorySkills).items()
                                           if (s := getattr(m, "skill", None)) is not None}
SKILLS: dict[str, str] = {name: method for name, (_, method) in _DECLARED.items()}


def register_skills(registry: SkillRegistry) -> None:
    """Every memory skill; its Python side is the agent's MemorySkills (or RemoteSkills) `run`."""
    for skill, _ in _DECLARED.values():
        registry.add(skill)


class RemoteSkills:
    """The memory skills of a remote agent: each runs on the server as this agent, in its turn's scope."""

    def __init__(self, memory: RemoteMemory, now: Callable[[], str], max_items: int, max_episode_lines: int) -> None:
        self.memory, self.now, self.max_items, self.max_episode_lines = memory, now, max_items, max_episode_lines
        self.scope = scopes.DEFAULT
        self.asker: str | None = None  # who the turn answers (MemorySkills.asker; the runtime sets it)

    @property
    def visible(self) -> frozenset[str]:
        return scopes.reading(self.scope)

    def run(self, skill: str, arg: str) -> str:
        try:
            answer = self.memory.caller.call("agent_skill", skill=skill, arg=arg, time=self.now(), scope=self.scope,
                                             max_items=self.max_items, max_lines=self.max_episode_lines,
                                             asker=self.asker)
        except (ServerRefused, ServerUnavailable) as err:
            raise SkillError(str(err)) from None
        return str(answer["result"])


def for_memory(memory: MemoryAPI, now: Callable[[], str], max_items: int, max_episode_lines: int,
               lenses: dict[str, Any] | None = None) -> MemorySkills | RemoteSkills:
    """The agent's memory skills over `memory`: run here over a local memory, or on the memory server
    (as this agent, in its turn's scope) over a RemoteMemory, where the server's lenses apply."""
    if isinstance(memory, RemoteMemory):
        return RemoteSkills(memory, now, max_items, max_episode_lines)
    return MemorySkills(cast(LocalMemoryAPI, memory), now, max_items, max_episode_lines, lenses=lenses)
