"""The shell skill: a command with a timeout, its whole process group killed, its output capped.

Output is read by a thread while the command runs, so a command that prints gigabytes never fills
memory or disk: the first `max_output` characters are kept and the rest only counted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from pathlib import Path

from mettaclaw.skills import SkillError


def run_shell(command: str, cwd: Path, timeout: float, max_output: int) -> str:
    if not command.strip():
        raise SkillError("no command given")
    Path(cwd).mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        ["/bin/bash", "-c", command],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so the kill reaches every child
    )
    kept = bytearray()
    dropped = [0]

    def drain() -> None:
        assert proc.stdout is not None
        while chunk := proc.stdout.read1(65536):
            room = max_output - len(kept)
            kept.extend(chunk[:room])
            dropped[0] += max(0, len(chunk) - room)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # children left behind by the shell die too
        proc.wait()
    reader.join(timeout=2)
    text = kept.decode("utf-8", errors="replace")
    if dropped[0]:
        text += f"\n[... output truncated: {dropped[0]} more bytes not shown ...]"
    if timed_out:
        return f"timeout_error: killed after {timeout:g} s with its process group\n{text}".rstrip()
    if proc.returncode:
        text += f"\n[exit status {proc.returncode}]"
    return text
