"""Configuration: precedence, refusal of unknown keys and bad values, one folder for all state, the lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mettaclaw.config import ConfigError, load_config
from mettaclaw.memory.errors import AgentLocked
from mettaclaw.memory.stores.lock import FolderLock


def test_precedence_defaults_file_environment_arguments(tmp_path) -> None:
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text('maxHistory = 100\nmaxRecallItems = 7\nLLM = "from-file"\nsleepInterval = 2.5\n')
    env = {"METTACLAW_maxRecallItems": "8", "METTACLAW_LLM": "from-env"}
    config = load_config(["LLM=from-args", f"config={cfg_file}"], env=env)
    assert config.maxNewInputLoops == 50  # default
    assert config.maxHistory == 100 and config.sleepInterval == 2.5  # file
    assert config.maxRecallItems == 8  # environment beats file
    assert config.LLM == "from-args"  # arguments beat all


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (["maxNewInputLoop=5"], "maxNewInputLoop"),
        (["maxHistory=-1"], "maxHistory"),
        (["sleepInterval=soon"], "sleepInterval"),
        (["provider=gpt"], "provider"),
        (["chromaPort=70000"], "chromaPort"),
        (["spamShield=perhaps"], "spamShield"),
        (["memoryDir=/tmp/a\x00b"], "memoryDir"),  # a NUL reached mkdir: ValueError, a traceback
        (["workspaceDir=w\x00"], "workspaceDir"),
        (["knowledgePriorsDir=~no-such-user-h1/notes"], "knowledgePriorsDir"),  # expanduser: a RuntimeError
        (["workspaceDir=~no-such-user-h1"], "workspaceDir"),
    ],
)
def test_unknown_keys_and_bad_values_are_refused_naming_the_key(args, key) -> None:
    with pytest.raises(ConfigError, match=repr(key)):
        load_config(args, env={})


@pytest.mark.parametrize("key", ["mcpHost", "chromaHost", "ircHost", "LLM", "embeddingModel", "apiKeyEnv",
                                 "mcpTokenEnv", "uiTokenEnv", "ircSecretEnv"])
@pytest.mark.parametrize("value", ["", " ", "\t"])
def test_an_empty_host_or_name_is_refused(key: str, value: str) -> None:
    # `host=` served the memory over MCP on every interface (asyncio's "" is all of them), not 127.0.0.1
    with pytest.raises(ConfigError, match=repr(key)):
        load_config([f"{key}={value}"], env={})
    with pytest.raises(ConfigError, match=repr(key)):
        load_config([], env={f"METTACLAW_{key}": value})
    with pytest.raises(ConfigError, match="'mcpHost'"):
        load_config(["mcpHost=127.0.0.1 8765"], env={})
    with pytest.raises(ConfigError, match="'apiKeyEnv'"):
        load_config(["apiKeyEnv=OPENAI_API_KEY=sk-123"], env={})
    assert load_config(["mcpHost=::1", "LLM=llama 3.1 8b"], env={}).LLM == "llama 3.1 8b"


def test_bad_environment_value_names_the_key() -> None:
    with pytest.raises(ConfigError, match="'maxCommands'"):
        load_config([], env={"METTACLAW_maxCommands": "many"})


def test_a_config_file_with_a_byte_order_mark_is_read(tmp_path) -> None:
    windows = tmp_path / "mettaclaw.toml"  # Notepad's UTF-8: refused as 'Invalid statement (at line 1, column 1)'
    windows.write_bytes(b"\xef\xbb\xbfmaxTurns = 3\r\nLLM = \"caf\xc3\xa9\"\r\n")
    config = load_config([f"config={windows}"], env={})
    assert config.maxTurns == 3 and config.LLM == "caf\u00e9"


def test_malformed_argument_and_missing_or_broken_file(tmp_path) -> None:
    with pytest.raises(ConfigError, match="not of the form key=value"):
        load_config(["verbose"], env={})
    with pytest.raises(ConfigError, match="does not exist"):
        load_config([f"config={tmp_path / 'none.toml'}"], env={})
    with pytest.raises(ConfigError, match="is not a file"):  # it said 'does not exist'
        load_config([f"config={tmp_path}"], env={})
    with pytest.raises(ConfigError, match="'/dev/zero' is not a file"):
        load_config([], env={"METTACLAW_CONFIG": "/dev/zero"})
    with pytest.raises(ConfigError, match="cannot be read: File name too long"):  # was a traceback
        load_config([f"config={tmp_path / ('c' * 300)}.toml"], env={})
    bad = tmp_path / "bad.toml"
    bad.write_text("maxHistory = = 3")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config([f"config={bad}"], env={})


def test_one_setting_moves_all_state(make_agent, tmp_path) -> None:
    agent, llm, channel, _ = make_agent(["pin keep this\nwrite-file a.txt hello"], ["hi"])
    agent.turn()
    state = tmp_path / "memory"
    assert (state / "history.metta").is_file() and (state / "pins.txt").is_file()
    assert (state / "workspace" / "a.txt").read_text() == "hello"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory"]


HOLDER = """
import sys, time
sys.path.insert(0, sys.argv[2])
from conftest import test_config
from pathlib import Path
from mettaclaw.memory import open_memory
memory = open_memory(test_config(Path(sys.argv[1])), dream=False)
print("locked", flush=True)
time.sleep(60)
"""


def test_a_second_agent_on_the_same_memory_folder_is_refused(tmp_path) -> None:
    from conftest import test_config

    from mettaclaw.memory import open_memory

    folder = tmp_path / "memory"
    tests = str(Path(__file__).parent)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), tests], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        # the message said "another agent" whatever held the folder (the MCP server, an import, ...)
        with pytest.raises(AgentLocked, match=rf"^process {holder.pid} \({Path(sys.executable).name} -c '") as err:
            open_memory(test_config(folder), dream=False)
        assert f"is already using the memory folder {str(folder)!r}" in str(err.value)
        assert "\n" not in str(err.value)  # the holder's program was a script of many lines
    finally:
        holder.kill()
        holder.wait()
    assert (folder / "agent.lock.holder").is_file()  # killed, it left its note of who held the folder
    second = FolderLock(folder)  # free again once the holder is gone
    with pytest.raises(AgentLocked, match=rf"^process {os.getpid()} \("):
        FolderLock(folder)
    (folder / "agent.lock.holder").write_text('{"pid": 999999999, "program": "x", "since": "y"}')  # one gone
    with pytest.raises(AgentLocked, match=r"^another process \(an agent, the MCP memory server, an export or an import\)"):
        FolderLock(folder)
    if Path("/proc/self/stat").exists():  # one gone whose pid a live process has now: named it as the holder
        (folder / "agent.lock.holder").write_text(json.dumps({"pid": os.getpid(), "program": "old", "since": "y",
                                                              "started": 1}))
        with pytest.raises(AgentLocked, match=r"^another process \("):
            FolderLock(folder)
    second.release()
    assert not (folder / "agent.lock.holder").exists()


def test_run_py_refuses_a_bad_setting_in_one_line(tmp_path) -> None:
    from mettaclaw.runtime import PROJECT_ROOT

    proc = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "run.py"), "maxTurns=lots", f"memoryDir={tmp_path}"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("config error: bad value for setting 'maxTurns'")


def test_an_unreadable_config_file_is_refused_in_one_line(tmp_path, monkeypatch) -> None:
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text("maxHistory = 100\n")

    def denied(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_text", denied)  # chmod 000 does not stop root, who runs the CI
    with pytest.raises(ConfigError, match="cannot be read: Permission denied"):
        load_config([f"config={cfg_file}"], env={})


def test_an_empty_config_variable_names_no_file(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no mettaclaw.toml here
    assert load_config([], env={"METTACLAW_CONFIG": ""}).maxHistory == 30_000
    assert load_config(["config="], env={}).maxHistory == 30_000


@pytest.mark.parametrize(("line", "key"), [("maxTurns = true", "maxTurns"), ("sleepInterval = false", "sleepInterval"),
                                           ('[scopePolicies."user:bob"]\nmaxEntries = true', "scopePolicies.user:bob.maxEntries")])
def test_a_toml_boolean_is_not_taken_for_a_number(tmp_path, line, key) -> None:
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text(line + "\n")  # pydantic took true as 1: one turn, or one record kept of bob's scope
    with pytest.raises(ConfigError, match=f"'{key}': .*not a number"):
        load_config([f"config={cfg_file}"], env={})


def test_a_memory_folder_part_of_which_cannot_be_used_is_refused_in_one_line(tmp_path, capsys) -> None:
    from conftest import test_config

    from mettaclaw import entry

    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "history.metta").mkdir()  # as a read-only copy or a full disk would: an OSError from deep inside
    assert entry.open_memory(test_config(folder), dream=False) is None
    err = capsys.readouterr().err
    assert err == f"error: the memory in {str(folder)!r} cannot be opened: Is a directory ({folder / 'history.metta'})\n"
    (folder / "history.metta").rmdir()
    entry.open_memory(test_config(folder), dream=False).close()  # the folder lock was let go


def test_ctrl_c_while_the_memory_opens_is_one_line(tmp_path, capsys, monkeypatch) -> None:
    from conftest import test_config

    import mettaclaw.memory
    from mettaclaw import entry

    def embedding_a_long_prior(*args, **kwargs):
        raise KeyboardInterrupt  # a 58-line traceback, when run.py had not yet taken Ctrl-C over

    monkeypatch.setattr(mettaclaw.memory, "open_memory", embedding_a_long_prior)
    assert entry.open_memory(test_config(tmp_path / "memory")) is None
    assert "stopped while opening the memory" in capsys.readouterr().err


@pytest.mark.parametrize("url", ["notaurl", "ftp://models.example", "http://[::1", "http://127.0.0.1:99999/v1"])
def test_a_base_url_no_client_can_call_is_refused(url) -> None:
    with pytest.raises(ConfigError, match="'base_url'"):  # the last one was httpx's traceback at start-up
        load_config([f"base_url={url}"], env={})


@pytest.mark.parametrize("url", [" http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1 x", "http://127.0.0.1:8080/\tv1"])
def test_a_base_url_with_a_space_in_it_is_refused(url) -> None:
    """urlsplit skips leading blanks, so ' http://...' (a space copied from a TOML file or a service's
    environment) was taken, and every model call then failed with 'cannot reach  (UnsupportedProtocol:
    Request URL is missing an 'http://' or 'https://' protocol.)', naming no host."""
    with pytest.raises(ConfigError, match="'base_url'.*space"):
        load_config([f"base_url={url}"], env={})
    with pytest.raises(ConfigError, match="'memoryServer'.*space"):
        load_config([f"memoryServer={url.replace('8080/v1', '8765/mcp')}"], env={})


def test_values_nested_too_deeply_are_refused_not_a_recursion_traceback(tmp_path) -> None:
    with pytest.raises(ConfigError, match="'lenses'.*nested too deeply") as refused:
        load_config(["lenses=" + "[" * 100_000], env={})
    assert len(str(refused.value)) < 400, "the value is quoted in part, not 100,000 characters of it"
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 100_000 + "\n")
    with pytest.raises(ConfigError, match="not valid TOML: nested too deeply"):
        load_config([f"config={deep}"], env={})


def test_the_log_shows_no_password_of_a_url() -> None:
    """httpx logs each request's URL: base_url=http://user:secret@proxy/v1 put the password into
    agent.log at every model call."""
    import logging

    from mettaclaw.entry import Redacting

    def line(msg: str, *args: object) -> str:
        record = logging.LogRecord("httpx2", logging.INFO, __file__, 1, msg, args, None)
        return Redacting("%(name)s: %(message)s").format(record)

    said = line('HTTP Request: POST %s "HTTP/1.1 200 OK"', "http://bob:pw-123%40x@127.0.0.1:8080/v1/chat/completions")
    assert said == 'httpx2: HTTP Request: POST http://***@127.0.0.1:8080/v1/chat/completions "HTTP/1.1 200 OK"'
    assert line("to HTTPS://tok@host/x and wss://a:b@c/") == "httpx2: to HTTPS://***@host/x and wss://***@c/"
    assert line("mail bob@example.com at http://host/a@b") == "httpx2: mail bob@example.com at http://host/a@b"
