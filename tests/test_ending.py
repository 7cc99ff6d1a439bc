"""Ctrl-D and Ctrl-C end the agent, as the README promises: stores closed, the trace flushed, and
never a Rust panic or a model called on and on with nobody there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}


def start(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    common = [f"memoryDir={tmp_path / 'm'}", "embeddingprovider=hash", "sleepInterval=0",
              f"knowledgePriorsDir={tmp_path / 'none'}"]
    return subprocess.Popen([sys.executable, "run.py", *common, *args], cwd=ROOT, env=env or ENV, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def records(tmp_path: Path) -> list[str]:
    return (tmp_path / "m" / "history.metta").read_text(encoding="utf-8").splitlines()


def test_ctrl_d_ends_the_console_agent(tmp_path: Path) -> None:
    proc = start(tmp_path, "provider=console")
    # piped at once, the lines may reach the agent as a message or as the model's lines (a race a
    # person typing never meets); either way end of input must end it, with the line on record
    out, err = proc.communicate("send hi there\n\n", timeout=90)
    assert proc.returncode == 0, err[-2000:]
    assert any("hi there" in r for r in records(tmp_path))


def test_end_of_input_stops_a_model_that_would_go_on(tmp_path: Path) -> None:
    script = tmp_path / "script.txt"
    script.write_text("\n---\n".join(f"send reply {i}" for i in range(60)))
    proc = start(tmp_path, "provider=scripted", f"scriptFile={script}", "maxNewInputLoops=50")
    out, err = proc.communicate("hello\n", timeout=90)
    assert proc.returncode == 0, err[-2000:]
    calls = out.count("agent> reply")
    assert 1 <= calls <= 3, out  # it answered, then stopped: not 51 more calls
    assert any('"hello"' in r for r in records(tmp_path))


class NeverAnswers(BaseHTTPRequestHandler):
    asked = threading.Event()

    def do_POST(self) -> None:  # noqa: N802
        NeverAnswers.asked.set()
        threading.Event().wait(120)  # a model that takes its time

    def log_message(self, *args) -> None:
        pass


def test_ctrl_c_during_a_model_call_ends_the_agent_cleanly(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), NeverAnswers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proc = start(tmp_path, "provider=openai", f"base_url=http://127.0.0.1:{server.server_address[1]}/v1",
                     "llmTimeout=100", env={**ENV, "OPENAI_API_KEY": "k"})
        proc.stdin.write("hello\n")
        proc.stdin.flush()
        assert NeverAnswers.asked.wait(90), "the model was never called"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)  # long before the model would answer (or time out)
        assert proc.returncode == 0, (proc.returncode, err[-3000:])
        assert "stopped." in out and "panic" not in err
        assert any('"hello"' in r for r in records(tmp_path)), "the turn was recorded and flushed"
        assert (tmp_path / "m" / "index-snapshot").is_dir(), "the stores were closed cleanly (a clean close keeps the snapshot)"
    finally:
        server.shutdown()


def test_a_closed_output_ends_the_agent_with_one_line_and_the_memory_closed(tmp_path: Path) -> None:
    """`python run.py | head -1`: the agent went on answering nobody (each send an 'internal error
    BrokenPipeError') until its input ended, or ended start-up in a BrokenPipeError traceback."""
    script = tmp_path / "script.txt"
    script.write_text("pin waiting for a message\n---\nsend reply to hello")  # the first turn sends nothing
    proc = start(tmp_path, "provider=scripted", f"scriptFile={script}", "maxNewInputLoops=2")
    for line in proc.stdout:
        if "mettaclaw is running" in line:
            break
    proc.stdout.close()  # whoever read the output is gone; the input stays open
    proc.stdin.write("hello\n")
    proc.stdin.flush()
    assert proc.wait(timeout=90) == 1
    err = proc.stderr.read()
    assert err.strip().splitlines()[-1] == "stopped: the output was closed" and "Traceback" not in err, err[-2000:]
    kept = records(tmp_path)
    assert any('"hello"' in r for r in kept) and "not sent: the terminal's output is closed" in kept[-1]
    assert (tmp_path / "m" / "index-snapshot").exists()  # closed, not abandoned


def test_ctrl_c_while_the_agent_loads_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """Ctrl-C in the first second (hyperon and the stores being imported) printed a KeyboardInterrupt
    traceback through importlib's frames. A hyperon that raises it on import stands in for the key."""
    fake = tmp_path / "fake" / "hyperon"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise KeyboardInterrupt\n")
    script = tmp_path / "script.txt"
    script.write_text("send hi\n")
    proc = start(tmp_path, "provider=scripted", f"scriptFile={script}",
                 env={**ENV, "PYTHONPATH": str(fake.parent)})
    out, err = proc.communicate("hello\n", timeout=90)
    assert proc.returncode == 130 and "Traceback" not in err, (proc.returncode, err[-2000:])
    assert err.strip() == "stopped before the agent started"
