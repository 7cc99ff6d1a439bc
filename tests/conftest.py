"""Shared fixtures: an agent on a scripted model, a queue channel and in-memory stores, in tmp_path."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from mettaclaw.channels import QueueChannel  # noqa: E402
from mettaclaw.config import load_config  # noqa: E402
from mettaclaw.llm import Scripted  # noqa: E402
from mettaclaw.memory.stores.embedders import HashEmbedder  # noqa: E402

AgentFactory = Callable[..., tuple]


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it embeds (to test what is, and is not, re-embedded)."""

    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return super().embed(texts)


def record_deletes(store) -> list[list[str]]:
    """The ids of each `delete` call on this vector store from now on (the store still deletes them):
    to test that a caller retiring many rows makes one store call, not one a row."""
    calls: list[list[str]] = []
    inner = store.delete

    def delete(rows):
        calls.append(list(rows))
        return inner(rows)

    store.delete = delete
    return calls


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


def test_config(memory_dir: Path, *settings: str):
    """A config for tests: the hash embedder, in-memory vector stores, no priors, no dream schedule."""
    priors = memory_dir.parent / "no-priors"  # a missing folder: no priors
    base = [f"memoryDir={memory_dir}", "sleepInterval=0", "embeddingprovider=hash", "chromaMode=memory",
            f"knowledgePriorsDir={priors}", "dreamInterval=0"]
    return load_config([*base, *settings], env={})


@pytest.fixture
def open_test_memory(tmp_path: Path) -> Iterator[Callable[..., object]]:
    """open_test_memory(*settings, clock=..., folder="memory", **kw) -> Memory (closed after the test)."""
    from mettaclaw.memory import open_memory

    opened = []

    def factory(*settings: str, folder: str = "memory", **kw):
        memory = open_memory(test_config(tmp_path / folder, *settings), **kw)
        opened.append(memory)
        return memory

    yield factory
    for memory in opened:
        memory.close()


@pytest.fixture
def make_agent(tmp_path: Path, open_test_memory) -> Iterator[AgentFactory]:
    """make_agent(replies, messages=(), **settings) -> (agent, llm, channel, clock), on `open_memory`
    with the test config; `agent.memory` is its memory."""
    from mettaclaw.runtime import Agent

    made = []

    def factory(replies: list[str], messages: tuple[str, ...] | list[str] = (), **settings):
        extra = [f"{k}={v}" for k, v in settings.items()]
        clock = FakeClock()
        memory = open_test_memory(*extra, clock=clock)
        config = test_config(tmp_path / "memory", *extra)
        llm = Scripted(replies)
        channel = QueueChannel(messages)
        agent = Agent(config, llm, channel, memory, clock=clock)
        made.append(agent)
        return agent, llm, channel, clock

    yield factory
    for agent in made:
        agent.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def chroma_server(tmp_path):
    """A `chroma run` on a free loopback port, stopped after the test; its port."""
    from mettaclaw.memory.errors import StoreUnavailable
    from mettaclaw.memory.stores.chroma import ChromaVectorStore

    exe = shutil.which("chroma")
    if exe is None:
        pytest.fail("the `chroma` command (installed with chromadb) is missing")
    port = free_port()
    proc = subprocess.Popen(
        [exe, "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1", "--port", str(port)],
        env={**os.environ, "RUST_LOG": "warn", "ANONYMIZED_TELEMETRY": "False"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                ChromaVectorStore.server("127.0.0.1", port, embedder_signature="probe:1", collection="probe").close()
                break
            except StoreUnavailable:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"chroma run did not start: {proc.stderr.read().decode()[-2000:]}") from None
                time.sleep(0.2)
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_module(name: str) -> Any:
    """A script of `bench/` loaded as a module (`bench/<name>.py`, its own folder on the path while it loads)."""
    import importlib.util

    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"{name}_bench", BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))
