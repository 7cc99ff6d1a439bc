"""One contract over both implementations of MemoryAPI: a memory in this process (Memory) and an agent's
memory on a memory server (RemoteMemory, here over the server's tools called in process). Whatever the
runtime relies on must hold for both."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import test_config as config_for
from test_shared_memory import InProcessCaller

from mettaclaw.mcp.tools import MemoryTools
from mettaclaw.memory import LocalMemoryAPI, Memory, MemoryAPI, RemoteMemory
from mettaclaw.memory.stores.lock import FolderLock
from mettaclaw.messages import Message
from mettaclaw.parser import Command

T = "2026-03-01 10:00:00"


@pytest.fixture(params=["local", "remote"])
def memory(request, tmp_path: Path, open_test_memory) -> MemoryAPI:
    if request.param == "local":
        return open_test_memory()
    server = open_test_memory(folder="server")
    config = config_for(tmp_path / "agent")
    remote = RemoteMemory(config, InProcessCaller(MemoryTools(server)), FolderLock(config.memory_path()))
    request.addfinalizer(remote.close)
    return remote


def test_both_implement_the_api(memory) -> None:
    assert isinstance(memory, MemoryAPI)
    assert isinstance(memory.priors.summary(), str) and memory.last_context is None


def test_a_recorded_turn_is_in_the_history_of_its_own_scope_only(memory) -> None:
    alice = Message("the gate code is 4417", "alice", "irc:#home")
    record = memory.record_turn(T, [alice], [Command("send", ("noted",))], None, [(0, 1.5)])
    assert record.turn_id and record.episode_ids and all(i.startswith(("ep-", "act-")) for i in record.episode_ids)
    assert "gate code is 4417" in memory.trace_tail(4000, frozenset({"user:alice"}))
    assert "gate code is 4417" not in memory.trace_tail(4000, frozenset({"user:bob"}))
    assert "gate code is 4417" in memory.trace_tail(4000)  # no scope given: every record


def test_the_prompt_blocks_are_text_and_empty_without_a_message(memory) -> None:
    assert memory.knowledge("   ", 1000) == "" and memory.knowledge("the gate code", 0) == ""
    assert isinstance(memory.knowledge("what is the gate code?", 1000), str)
    assert isinstance(memory.predictions("run the backup", [Command("shell", ("ls",))], T), str)


def test_each_scope_has_its_own_pin_and_an_empty_pin_clears_it(memory) -> None:
    assert memory.working.pin("water the ferns", "user:alice") == "PIN-SUCCESS"
    assert memory.working.text_of("user:alice") == "water the ferns" and memory.working.text_of("user:bob") == ""
    assert memory.working.pin("", "user:alice") == "PIN-CLEARED" and memory.working.text_of("user:alice") == ""


def test_tick_and_close_are_safe_to_repeat(memory) -> None:
    memory.tick()
    memory.tick()
    memory.close(threading.Event())
    memory.close()


def test_the_memory_held_here_is_the_local_api_and_the_remote_one_is_not(memory) -> None:
    """The memory skills, the memory server's tools and the inspector need a memory held in this process;
    a remote agent's skills run on its server instead (skills.memory.for_memory)."""
    from mettaclaw.skills.memory import MemorySkills, RemoteSkills, for_memory

    skills = for_memory(memory, lambda: T, 10, 20)
    if isinstance(memory, Memory):
        assert isinstance(memory, LocalMemoryAPI) and isinstance(skills, MemorySkills)
    else:
        assert not isinstance(memory, LocalMemoryAPI) and isinstance(skills, RemoteSkills)
    assert skills.run("remember", "the spare key is under the blue pot").startswith("REMEMBER-SUCCESS")
    assert "blue pot" in skills.run("query", "where is the spare key")
