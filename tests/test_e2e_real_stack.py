"""End to end on the real stack, offline: hyperon, embedded ChromaDB, the real MiniLM embedder, files."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mettaclaw.channels import QueueChannel
from mettaclaw.config import load_config
from mettaclaw.llm import Scripted
from mettaclaw.runtime import PROJECT_ROOT, Agent

pytestmark = pytest.mark.slow


def open_agent(memory_dir, replies, messages):
    """What run.py does: the memory from open_memory (real MiniLM, embedded Chroma, SQLite), then the agent."""
    from mettaclaw.memory import open_memory

    config = load_config([f"memoryDir={memory_dir}", "sleepInterval=0",
                          f"knowledgePriorsDir={PROJECT_ROOT / 'knowledge-priors'}"], env={})
    memory = open_memory(config)
    return Agent(config, Scripted(replies), QueueChannel(messages), memory), memory


def test_agent_loop_on_the_real_stack_remembers_across_a_restart(tmp_path) -> None:
    agent, memory = open_agent(tmp_path, [
        "remember The project deadline moved to the 14th of March\nremember (--> ada engineer) (stv 1 0.9)\n"
        "learn Ada lives in London\nquery when is the deadline",
    ], ["please note the deadline change"])
    try:
        first = agent.turn()
        assert "REMEMBER-SUCCESS" in first.results[0]
        assert "14th of March" in first.results[3].split("\n")[0]  # same-turn recall, best first
        assert "embedder" in str(memory.index.stats())
    finally:
        agent.close()
        memory.close()
    again, memory = open_agent(tmp_path, ["query deadline for the project\nrecall where does Ada live\n"
                                          "query what is mettaclaw\nquery the deadline change note"], ["hi"])
    try:
        second = again.turn()
        assert "14th of March" in second.results[0].split("\n")[0]
        assert "Ada lives in London" in second.results[1]
        assert "knowledge_prior" in second.results[2] or "mettaclaw" in second.results[2].lower()
        assert "please note the deadline change" in second.results[3]  # the first turn's message, as an episode
        assert len(memory.trace) == 2  # the trace survived the restart too
    finally:
        again.close()
        memory.close()


def test_the_two_commands_run_the_agent(tmp_path) -> None:
    script = tmp_path / "script.txt"
    script.write_text("send hello from the real stack\nremember the user said hi\n---\nsend still here\n")
    proc = subprocess.run(
        [sys.executable, "run.py", "provider=scripted", f"scriptFile={script}", f"memoryDir={tmp_path / 'm'}",
         "maxTurns=3", "sleepInterval=0"],
        cwd=PROJECT_ROOT, input="hi\n", capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "agent> hello from the real stack" in proc.stdout and "agent> still here" in proc.stdout
    trace = (tmp_path / "m" / "history.metta").read_text()
    assert '"HUMAN_MESSAGE: " "hi" (send "hello from the real stack") (remember "the user said hi")' in trace
    assert (tmp_path / "m" / "chroma").is_dir()
