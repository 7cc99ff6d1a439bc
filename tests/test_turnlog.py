"""The turn log: one JSON line a turn with the prompt's sections, the reply, each command's result and
duration, and errors; rotated by size; read back with `python -m mettaclaw.turns tail`."""

from __future__ import annotations

import json
import subprocess
import sys

from mettaclaw.turns import TurnLog, read, render


def test_each_turn_is_one_readable_line(make_agent, tmp_path) -> None:
    agent, llm, channel, clock = make_agent(["send hello there\nshell echo from-the-shell", "bogus-skill x y", "send bye"],
                                            ["hi agent"])
    agent.turn()
    channel.put("a second message")
    agent.turn()
    channel.put("and a third")
    agent.turn()
    path = agent.config.memory_path("turns.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["turn"] for r in records] == [1, 2, 3]
    first = records[0]
    assert first["messages"][0]["text"] == "hi agent" and first["reply"].startswith("send hello there")
    assert {"instructions", "SKILLS", "OUTPUT_FORMAT", "HISTORY", "TIME"} <= set(first["prompt_sections"])
    assert first["prompt_chars"] >= sum(first["prompt_sections"].values())
    assert [c["skill"] for c in first["commands"]] == ["send", "shell"]
    assert "from-the-shell" in first["commands"][1]["result"] and first["commands"][1]["ms"] > 0
    assert first["model_ms"] is not None and first["turn_ms"] >= first["model_ms"]
    assert any("unknown skill" in e for e in records[1]["errors"])
    assert records[0]["episode_id"].startswith("ep-")
    shown = subprocess.run([sys.executable, "-m", "mettaclaw.turns", "tail", "-n", "2",
                            f"memoryDir={agent.config.memory_path()}"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "turn 2" in shown.stdout and "turn 3" in shown.stdout and "turn 1 " not in shown.stdout
    assert "a second message" in shown.stdout and "unknown skill" in shown.stdout


def test_the_log_rotates_and_reads_back_in_order(tmp_path) -> None:
    log = TurnLog(tmp_path / "turns.jsonl", max_mb=1)
    for n in range(2500):
        log.write({"turn": n, "reply": "x" * 1000})
    log.close()
    assert (tmp_path / "turns.jsonl.1").is_file(), "rotated past 1 MB"
    turns = [r["turn"] for r in read(tmp_path / "turns.jsonl")]
    assert turns == sorted(turns) and turns[-1] == 2499 and len(turns) < 2500 * 1.01
    assert "turn 2499" in render({"turn": 2499, "time": "t", "reply": "send x", "commands": [], "turn_ms": 1.0})


def test_no_log_when_switched_off(make_agent) -> None:
    agent, *_ = make_agent(["send hi"], ["hello"], turnLogMB=0)
    agent.turn()
    assert not agent.config.memory_path("turns.jsonl").exists()


def test_a_reply_no_store_can_encode_is_still_logged(make_agent, capsys) -> None:
    agent, *_ = make_agent(["send hi \ud800 there\nbogus\udcff x y"], ["hello"])
    agent.turn()
    records = list(read(agent.config.memory_path("turns.jsonl")))
    assert len(records) == 1 and "\ufffd" in records[0]["reply"]
    assert "Logging error" not in capsys.readouterr().err


def test_tail_of_a_log_that_cannot_be_read_says_so_in_one_line(tmp_path) -> None:
    folder = tmp_path / ("m" * 300)  # a name past the system's limit: a traceback
    done = subprocess.run([sys.executable, "-c", "import sys; from mettaclaw.turns import main; sys.exit(main(sys.argv[1:]))",
                           "tail", f"memoryDir={folder}"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr == f"error: the turn log {str(folder / 'turns.jsonl')!r} cannot be read: File name too long\n"
