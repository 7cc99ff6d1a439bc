"""Python sides of the memory and reasoning skills: long-term memory, semantic memory, `infer`.

They sit between the MeTTa declarations (metta/memory-skills.metta) and the memory tiers, so the
runtime itself never needs to know which tiers are configured: a skill whose tier is missing answers
with a clear error naming what is not configured.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mettaclaw.skills import SkillError

MODE_PREFIX = re.compile(r"^\s*(?:mode=)?(semantic|episodic|hybrid)\s*:?\s+", re.IGNORECASE)


class MemorySkills:
    def __init__(self, longterm: Any, semantic: Any, now: Callable[[], str], max_items: int, source: str = "agent",
                 dreamer: Any = None) -> None:
        self.longterm = longterm
        self.semantic = semantic
        self.now = now
        self.max_items = max_items
        self.source = source
        self.dreamer = dreamer
        self._recall: Any = None

    def agent_recall(self) -> Any:
        """Both layers fused, with spreading activation: what `query` and the LoCoMo pipeline use."""
        from mettaclaw.memory.recall import AGENT_RECALL_OPTIONS, AgentRecall, LayerGraph

        if self._recall is None:
            graph = LayerGraph(self.semantic, longterm=self.longterm)
            self._recall = AgentRecall(self.longterm, self.semantic, graph, **AGENT_RECALL_OPTIONS)
        return self._recall

    def _need(self, tier: Any, what: str) -> Any:
        if tier is None:
            raise SkillError(f"{what} is not configured in this agent")
        return tier

    # --- long-term memory
    def remember(self, text: str) -> str:
        from mettaclaw.reasoning.atoms import AtomError, looks_like_belief, parse_belief

        memory = self._need(self.longterm, "long-term memory")
        text = text.strip()
        if not text:
            raise SkillError("nothing to remember (empty text)")
        atom, kind = None, "memory"
        if looks_like_belief(text):
            try:
                atom, kind = parse_belief(text).text(), "belief"
            except AtomError as err:
                raise SkillError(f"not stored: the belief is malformed: {err}") from None
        result = memory.remember(atom or text, time=self.now(), source=self.source, kind=kind, atom=atom)
        stored = "REMEMBER-SUCCESS" if result.created else "REMEMBER-SUCCESS (already known; refreshed)"
        return f"{stored} {result.id}" + (f" belief {atom}" if atom else "")

    def query(self, phrase: str) -> str:
        """`query PHRASE`: the agent's recall over long-term and semantic memory (with spreading
        activation); `query episodic: PHRASE` long-term memory alone, with times; `query semantic:` /
        `query hybrid:` semantic recall."""
        from mettaclaw.memory.recall import render
        from mettaclaw.memory.semantic.skills import episodic_search

        phrase = phrase.strip()
        mode = MODE_PREFIX.match(phrase)
        if mode and mode[1].lower() != "episodic":
            return self.recall(phrase)
        if mode:
            phrase = phrase[mode.end() :]
        if not phrase:
            raise SkillError("query needs a phrase to look for")
        memory = self._need(self.longterm, "long-term memory")
        if self.semantic is not None and not mode:
            return render(self.agent_recall().recall(phrase, self.max_items)) or f"no memories match {phrase!r}"
        found = episodic_search(memory)(phrase, self.max_items)
        return "\n".join(f"({time}) {text}" for time, text, _ in found) or f"no memories match {phrase!r}"

    # --- semantic memory
    def semantic_skill(self, name: str) -> Callable[[str], str]:
        from mettaclaw.memory.semantic import skills

        def run(arg: str) -> str:
            mem = self._need(self.semantic, "semantic memory")
            if name == "recall":
                episodic = skills.episodic_search(self.longterm) if self.longterm is not None else None
                return skills.recall(mem, arg, episodic=episodic)
            return skills.SKILLS[name](mem, arg)

        return run

    def recall(self, arg: str) -> str:
        return self.semantic_skill("recall")(arg)

    def knowledge(self, message: str, budget: int) -> str:
        if self.semantic is None or not message.strip():
            return ""
        block = self.semantic.knowledge_block(message, budget)
        return f"KNOWLEDGE:\n{block}" if block else ""

    # --- dreaming and spreading activation
    def dream(self, arg: str) -> str:
        from mettaclaw.memory.dream import dream_skill

        return dream_skill(self._need(self.dreamer, "the dream phase"), arg)

    def spread(self, arg: str) -> str:
        from mettaclaw.memory.recall import LayerGraph, spread_skill

        semantic = self._need(self.semantic, "semantic memory")
        return spread_skill(semantic, LayerGraph(semantic, longterm=self.longterm), arg)

    # --- reasoning
    def infer(self, arg: str) -> str:
        from mettaclaw.reasoning.skills import infer_skill

        memory = self._need(self.longterm, "long-term memory")
        return infer_skill(arg, lambda query, limit: memory.query(query, limit=limit, kind="belief"))
