"""Shared fixtures: an agent on a scripted model, a queue channel and in-memory stores, in tmp_path."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from mettaclaw.channels import QueueChannel  # noqa: E402
from mettaclaw.config import load_config  # noqa: E402
from mettaclaw.llm import Scripted  # noqa: E402
from mettaclaw.memory.embedders import HashEmbedder  # noqa: E402

AgentFactory = Callable[..., tuple]


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it embeds (to test what is, and is not, re-embedded)."""

    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return super().embed(texts)


class TickingClock:
    """A clock one second later at every call, so each write gets its own time."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


class FakeClock:
    """A clock tests move by hand, so budget and wake timing are checked without sleeping."""

    def __init__(self, start: float = 1_790_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def make_agent(tmp_path: Path) -> Iterator[AgentFactory]:
    """make_agent(replies, messages=(), memory=None, semantic=None, **settings) -> (agent, llm, channel, clock)."""
    from mettaclaw.runtime import Agent

    made = []

    def factory(replies: list[str], messages: tuple[str, ...] | list[str] = (), memory=None, semantic=None, **settings):
        args = [f"memoryDir={tmp_path / 'memory'}", "sleepInterval=0", *(f"{k}={v}" for k, v in settings.items())]
        config = load_config(args, env={})
        llm = Scripted(replies)
        channel = QueueChannel(messages)
        clock = FakeClock()
        agent = Agent(config, llm, channel, memory=memory, semantic=semantic, clock=clock)
        made.append(agent)
        return agent, llm, channel, clock

    yield factory
    for agent in made:
        agent.close()
