"""Careless input is refused at once, in one line that names its cause: settings out of range, a store
made by another embedder, a path no file system holds; and `run.py --help` answers instead."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mettaclaw.config import Config, ConfigError, load_config, settings_table
from mettaclaw.skills import SkillError
from mettaclaw.skills.files import Workspace

ROOT = Path(__file__).resolve().parents[1]


def run_py(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    return subprocess.run([sys.executable, "run.py", *args], cwd=ROOT, env=env, input=stdin, text=True,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("setting", ["sleepInterval=inf", "llmTimeout=inf", "shellTimeout=inf", "llmTimeout=nan",
                                     "maxHistory=" + "9" * 30, "mettaTimeout=1e9", "memoryDir=", "memoryDir=   ",
                                     "knowledgePriorsDir=", "skillsDir=", "maxCommands=100000"])
def test_a_setting_out_of_its_range_is_refused_by_name(setting: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config([setting], env={})
    assert repr(setting.split("=")[0]) in str(err.value)


def test_every_setting_is_in_the_help_table_with_its_default() -> None:
    table = settings_table()
    for name, field in Config.model_fields.items():
        line = next(row for row in table.splitlines() if row.split(" ")[0] == name)
        assert field.default is None or str(field.default) in line


def test_run_py_help_prints_the_settings_and_exits_0() -> None:
    proc = run_py("--help")
    assert proc.returncode == 0 and "memoryDir" in proc.stdout and "sleepInterval" in proc.stdout, proc.stderr


def test_a_store_made_by_another_embedder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    script = tmp_path / "script.txt"
    script.write_text("send hello\n")
    common = ["provider=scripted", f"scriptFile={script}", f"memoryDir={tmp_path / 'm'}", "maxTurns=1",
              "sleepInterval=0", f"knowledgePriorsDir={tmp_path / 'none'}"]
    first = run_py(*common, "embeddingprovider=hash", stdin="hi\n")
    assert first.returncode == 0, first.stderr[-2000:]
    start = time.monotonic()
    second = run_py(*common, "embeddingprovider=local", stdin="hi\n")
    assert second.returncode == 2, second.stderr[-2000:]
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "hash:64" in lines[0] and "memoryDir" in lines[0], lines
    assert time.monotonic() - start < 60  # not after loading everything; the exact time is bench business


def test_a_path_deeper_or_longer_than_any_file_system_takes_is_refused_plainly(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    for name in ("a/" * 2000 + "x", "b" * 5000):
        for attempt in (lambda n=name: workspace.read(n), lambda n=name: workspace.write(n, "x")):
            with pytest.raises(SkillError, match="too long"):
                attempt()
    with pytest.raises(SkillError, match="cannot write"):
        workspace.write("c" * 300, "x")  # one name over the file system's 255 bytes
    assert workspace.write("d/e/f.txt", "fine") == "WRITE-FILE-SUCCESS" and workspace.read("d/e/f.txt") == "fine"


def test_started_from_another_folder_the_agent_finds_its_priors_and_says_what_it_loaded(tmp_path: Path) -> None:
    script = tmp_path / "script.txt"
    script.write_text("send hello\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "provider=scripted", f"scriptFile={script}",
                           f"memoryDir={tmp_path / 'm'}", "embeddingprovider=hash", "maxTurns=1", "sleepInterval=0",
                           "skillsDir=no-such-skills"],
                          cwd=tmp_path, env=env, input="hi\n", text=True, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(row for row in proc.stdout.splitlines() if row.startswith("knowledge priors"))
    shipped = len(list((ROOT / "knowledge-priors").glob("*.md")))
    assert f"from {ROOT / 'knowledge-priors'}: {shipped} file(s) indexed" in line and "(0 chunks)" not in line, line
    # a skills folder that is not there is said in one line, taken from the project folder as the priors are
    notice = f"warning: skillsDir {str(ROOT / 'no-such-skills')!r} does not exist; no user skills loaded"
    assert proc.stderr.splitlines().count(notice) == 1, proc.stderr[-2000:]


def test_start_up_mistakes_past_parsing_are_one_line_and_exit_2(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    binary = tmp_path / "script.bin"
    binary.write_bytes(b"\xff\xfe\x00send hi")
    env_without_keys = {k: v for k, v in os.environ.items() if not k.endswith("API_KEY")}
    cases = {
        ("provider=scripted",): "needs the setting 'scriptFile'",
        ("provider=scripted", f"scriptFile={tmp_path / 'missing.txt'}"): "cannot be read as text",
        ("provider=scripted", f"scriptFile={tmp_path}"): "cannot be read as text",
        ("provider=scripted", f"scriptFile={binary}"): "cannot be read as text",
        ("provider=openai",): "needs an API key in the environment variable OPENAI_API_KEY",
        (f"memoryDir={a_file}",): f"memoryDir {str(a_file)!r} cannot be used",
        (f"memoryDir={a_file / 'below'}",): "cannot be used",
    }
    for args, said in cases.items():
        proc = subprocess.run([sys.executable, "run.py", f"memoryDir={tmp_path / 'm'}", "embeddingprovider=hash", *args],
                              cwd=ROOT, env={**env_without_keys, "HF_HUB_OFFLINE": "1"}, input="", text=True,
                              capture_output=True, timeout=120)
        assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr[-1500:])
    assert a_file.read_text() == "not a folder"


def test_an_openai_embedder_without_its_key_is_refused_at_start_up(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("API_KEY")}
    proc = subprocess.run([sys.executable, "run.py", f"memoryDir={tmp_path / 'm'}", "embeddingprovider=openai",
                           "provider=console"], cwd=ROOT, env={**env, "HF_HUB_OFFLINE": "1"}, input="", text=True,
                          capture_output=True, timeout=120)
    assert proc.returncode == 2 and "needs an API key in the environment variable OPENAI_API_KEY" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_py_uses_its_own_checkout_whatever_mettaclaw_is_installed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "mettaclaw").mkdir(parents=True)
    (elsewhere / "mettaclaw" / "__init__.py").write_text("raise ImportError('the other checkout was imported')\n")
    script = tmp_path / "script.txt"
    script.write_text("send hello\n")
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "provider=scripted", f"scriptFile={script}",
                           f"memoryDir={tmp_path / 'm'}", "embeddingprovider=hash", "maxTurns=1", "sleepInterval=0",
                           f"knowledgePriorsDir={tmp_path / 'none'}"], cwd=tmp_path, input="hi\n", text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(elsewhere)},
                          capture_output=True, timeout=120)
    assert proc.returncode == 0 and "agent> hello" in proc.stdout, proc.stderr[-2000:]



def test_a_store_file_damaged_on_disk_is_one_line_saying_what_to_move_aside(tmp_path: Path) -> None:
    """A vector or semantic store whose SQLite file is not a database any more (a disk error, a copy cut
    short) was a chromadb InternalError or sqlite3.DatabaseError traceback. Now a sentence names the file
    and the way out; moved aside as it says, the agent starts again, saying that the vector store it
    held is gone (a deleted store used to be replaced by an empty one without a word)."""
    import shutil

    script = tmp_path / "script.txt"
    script.write_text("send hello\n")
    common = ["provider=scripted", f"scriptFile={script}", f"memoryDir={tmp_path / 'm'}", "maxTurns=1",
              "sleepInterval=0", f"knowledgePriorsDir={tmp_path / 'none'}", "embeddingprovider=hash"]
    assert run_py(*common, stdin="hi\n").returncode == 0
    vectors, records = tmp_path / "m" / "chroma", tmp_path / "m" / "semantic" / "records.sqlite3"
    for damaged, aside in ((vectors / "chroma.sqlite3", vectors), (records, records)):
        with open(damaged, "r+b") as fh:
            fh.write(b"\0" * 64)  # the header gone
        proc = run_py(*common, stdin="hi\n")
        said = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(said) == 1, proc.stderr[-2000:]
        assert "is damaged" in said[0] and f"mv {aside} {aside}.damaged" in said[0], said
        shutil.move(aside, f"{aside}.damaged")
    started = run_py(*common, stdin="hi\n")  # a new, empty vector store: said, since remembered memories are gone
    assert started.returncode == 0 and f"warning: the vector store {vectors} is empty" in started.stderr, started.stderr
    assert "warning" not in run_py(*common, stdin="hi\n").stderr, "said once"


def test_a_semantic_store_sqlite_cannot_open_is_one_line_naming_the_file(tmp_path: Path) -> None:
    """A folder where records.sqlite3 should be (or a semantic folder this user may not write) made
    sqlite3 raise 'unable to open database file' at start: a traceback that named no file. Now one line
    names the file and what it must be, and what was there is left as it was."""
    script = tmp_path / "script.txt"
    script.write_text("send hello\n")
    common = ["provider=scripted", f"scriptFile={script}", f"memoryDir={tmp_path / 'm'}", "maxTurns=1",
              "sleepInterval=0", f"knowledgePriorsDir={tmp_path / 'none'}", "embeddingprovider=hash"]
    records = tmp_path / "m" / "semantic" / "records.sqlite3"
    records.mkdir(parents=True)
    (records / "mine.txt").write_text("kept")
    proc = run_py(*common, stdin="hi\n")
    said = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(said) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert said[0] == (f"error: the memory in {str(tmp_path / 'm')!r} cannot be opened: SQLite cannot open the "
                       "semantic store (unable to open database file): it must be a file this user can read and "
                       f"write, in a folder it can write ({records})")
    assert (records / "mine.txt").read_text() == "kept"


@pytest.mark.parametrize("setting", ["llmTimeout=1e-300", "llmTimeout=0.001", "shellTimeout=0", "mettaTimeout=-1",
                                     "skillTimeout=0.5"])
def test_a_timeout_too_short_for_any_call_is_refused_with_why(setting: str) -> None:
    """`llmTimeout=1e-300` was taken, and every model call timed out at once, turn after turn."""
    with pytest.raises(ConfigError) as err:
        load_config([setting], env={})
    name = setting.split("=")[0]
    assert f"setting {name!r}" in str(err.value) and "at least 1 s" in str(err.value)
    assert "time out at once" in str(err.value)
    assert getattr(load_config([f"{name}=1"], env={}), name) == 1.0


def test_run_py_refuses_a_timeout_of_no_time_in_one_line() -> None:
    proc = run_py("llmTimeout=1e-300")
    assert proc.returncode != 0 and "'llmTimeout'" in proc.stderr and "at least 1 s" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
