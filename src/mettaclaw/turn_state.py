"""What the steps of one turn share while it runs (`TurnState`, reset when a turn starts) and what the
turn ends with (`TurnOutcome`). The steps are the agent's (runtime.py), called from the MeTTa turn."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from mettaclaw.messages import Message
from mettaclaw.parser import Command


@dataclass
class TurnState:
    """What the steps of one turn share; reset when a turn starts."""

    prompt: str = ""
    prompt_scope: str | None = None  # whose turn the prompt was built for (receive rebuilds it for another's)
    messages: list[Message] = field(default_factory=list)
    new: bool = False
    commands: list[Command] = field(default_factory=list)
    waiting: list[Any] = field(default_factory=list)  # parsed command atoms (or (Command, refusal)) not run yet, in order
    results: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    episode_id: str | None = None
    episode_ids: list[str] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)
    # for the turn log (turns.py)
    started: float = field(default_factory=time.perf_counter)
    sections: dict[str, int] = field(default_factory=dict)  # prompt section -> characters
    message_chars: int = 0  # what the model got as the message (KNOWLEDGE included)
    message: str = ""
    knowledge_chars: int = 0
    knowledge_level: str | None = None  # names, relations or full: how far the time budget let it go
    reply: str = ""
    model_ms: float | None = None
    tokens: dict[str, int] | None = None
    timings: list[dict[str, Any]] = field(default_factory=list)  # each command: skill, args, result, ms
    outcomes: list[tuple[int, float]] = field(default_factory=list)  # each command: (status, ms) for the trace

    def error(self, text: str) -> None:
        self.errors.append(text)
        self.results.append(text)


@dataclass
class TurnOutcome:
    acted: bool
    commands: list[Command]
    results: list[str]
    errors: list[str]
    episode_id: str | None  # the turn's trace record
    episode_ids: list[str] = field(default_factory=list)  # the episodes indexed from it
    message_ids: list[str] = field(default_factory=list)  # each message's episode, in the order they came
