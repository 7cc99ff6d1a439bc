"""The shell skill: a command with a timeout and limits, everything it started killed, its output capped.

Confinement, as far as this system allows (`confinement()` says which, at start-up and in the README):
- its own PID namespace (`unshare`), when the kernel grants one: when the command ends or times out,
  the namespace goes and every process in it dies, even a child that left the process group with
  `setsid`; without one, the process group is killed and such a child can survive;
- limits on memory (address space), CPU seconds and, for a user other than root, the number of
  processes (a fork storm fails instead of filling the machine);
- files are *not* confined: bubblewrap or the like would be needed, and is not used.

Output is read by a thread while the command runs, so a command that prints gigabytes never fills
memory or disk: the first `max_output` characters are kept and the rest only counted.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import resource
import shutil
import signal
import subprocess
import threading
from pathlib import Path

from mettaclaw.skills import SkillError

MEMORY_MB = 2048  # address space of the command and each child
MORE_PROCESSES = 256  # processes the command may add to what its user already runs


@functools.cache
def namespace_prefix() -> tuple[str, ...]:
    """The `unshare` words that run a command in its own PID namespace, or () when none is granted
    (tried once: as root directly, otherwise inside a user namespace)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    for extra in ((), ("--user", "--map-root-user")):
        prefix = (unshare, *extra, "--pid", "--fork", "--kill-child", "--mount-proc")
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return prefix
        except (OSError, subprocess.TimeoutExpired):
            continue
    return ()


def confinement() -> str:
    """What the shell skill confines here, in one line."""
    pids = ("its own PID namespace: nothing it starts outlives it" if namespace_prefix()
            else "no PID namespace on this system: a child that calls setsid can outlive the timeout")
    return (f"shell skill: {pids}; memory {MEMORY_MB} MB, CPU and process limits; "
            "files are NOT confined to the workspace (a command can read and write what this user can)")


def _own_processes() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                count += entry.stat().st_uid == uid
    return count


def _limits(timeout: float) -> None:
    """In the child before it runs the command (inherited by everything it starts)."""
    memory = MEMORY_MB * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = math.ceil(timeout) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))


def run_shell(command: str, cwd: Path, timeout: float, max_output: int) -> str:
    if not command.strip():
        raise SkillError("no command given")
    Path(cwd).mkdir(parents=True, exist_ok=True)
    processes = _own_processes() + MORE_PROCESSES if os.getuid() != 0 else None  # root ignores the limit

    def limits() -> None:
        _limits(timeout)
        if processes is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))

    proc = subprocess.Popen(
        [*namespace_prefix(), "/bin/bash", "-c", command],
        cwd=cwd,
        preexec_fn=limits,  # noqa: PLW1509 - only setrlimit calls, no locks taken
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
