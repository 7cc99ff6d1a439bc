"""The shell skill: a command with a timeout and limits, everything it started killed, its output capped.

Confinement, as far as this system allows (`confinement()` says which at start-up; docs/running.md):
- its own PID namespace (`unshare`), when the kernel grants one: when the command ends or times out,
  the namespace goes and every process in it dies, even a child that left the process group with
  `setsid`; without one, the process group is killed and such a child can survive;
- limits on memory (address space), CPU seconds and, for a user other than root, the number of
  processes (a fork storm fails instead of filling the machine);
- its files, with Landlock (`landlock.py`) where the kernel has it: it may write only in the workspace
  and in a private temporary folder (`TMPDIR`, removed afterwards), read and run only the system's
  folders (`/usr`, `/etc`, `/proc`, ... and Python's own), and touch nothing else: not the memory
  folder, the project, or a home folder. `allowOutsideWorkspace=true` lifts this, as it does for the
  file skills.

Output is read by a thread while the command runs, so a command that prints gigabytes never fills
memory or disk: the first `max_output` characters are kept and the rest only counted.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from mettaclaw.skills import SkillError, landlock
from mettaclaw.skills.registry import Skill, SkillHost, SkillRegistry

MEMORY_MB = 2048  # address space of the command and each child
MORE_PROCESSES = 256  # processes the command may add to what its user already runs
# Linux's limit on one argument of a program (MAX_ARG_STRLEN, its NUL included): `bash -c` takes the
# command as one, and a longer one failed to start as an internal error with a traceback in the log
MAX_COMMAND_BYTES = 128 * 1024 - 1


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


SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys", "/dev")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")  # writable: what commands expect to write to


def _readable() -> list[str]:
    return [*SYSTEM_FOLDERS, *sorted({sys.prefix, sys.base_prefix, sys.exec_prefix})]


def _file_prefix(writable: list[str]) -> tuple[str, ...]:
    """The words that run a command under the Landlock rules (this interpreter, isolated and without
    site packages, running `landlock.py`)."""
    words = [sys.executable, "-I", "-S", landlock.__file__]
    for path in [*writable, *DEVICES]:
        words += ["--write", path]
    for path in _readable():
        words += ["--read", path]
    return (*words, "--")


@functools.cache
def files_confined() -> bool:
    """Whether Landlock confinement works here (tried once, with a throwaway folder)."""
    if landlock.abi_version() < 1:
        return False
    with tempfile.TemporaryDirectory() as folder:
        try:
            done = subprocess.run([*namespace_prefix(), *_file_prefix([folder]), "/bin/sh", "-c", f"touch {folder}/x"],
                                  capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0 and os.path.exists(f"{folder}/x")


def confinement(confine_files: bool = True) -> str:
    """What the shell skill confines here, in one line."""
    pids = ("its own PID namespace: nothing it starts outlives it" if namespace_prefix()
            else "no PID namespace on this system: a child that calls setsid can outlive the timeout")
    if not confine_files:
        files = "files are NOT confined (allowOutsideWorkspace=true): a command can read and write what this user can"
    elif files_confined():
        files = ("files confined by Landlock: writes only in the workspace and a private temporary folder, "
                 "reads only of system folders")
    else:
        files = ("files are NOT confined to the workspace (no Landlock on this kernel): a command can read "
                 "and write what this user can")
    return f"shell skill: {pids}; memory {MEMORY_MB} MB, CPU and process limits; {files}"


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


def run_shell(command: str, cwd: Path, timeout: float, max_output: int, confine_files: bool = True) -> str:
    """Run `command` with bash in `cwd`; with `confine_files` (and Landlock here) it may write only in
    `cwd` and a private temporary folder."""
    if not command.strip():
        raise SkillError("no command given")
    size = len(command.encode("utf-8"))
    if size > MAX_COMMAND_BYTES:
        raise SkillError(f"the command is {size:,} bytes, at most {MAX_COMMAND_BYTES:,} (the system's limit on one "
                         "argument); write the script with write-file and run it with `bash FILE`")
    Path(cwd).mkdir(parents=True, exist_ok=True)
    if not (confine_files and files_confined()):
        return _run(command, cwd, timeout, max_output, (), None)
    with tempfile.TemporaryDirectory(prefix="mettaclaw-shell-", ignore_cleanup_errors=True) as scratch:
        env = {**os.environ, "TMPDIR": scratch, "HOME": scratch}  # tools that write caches or config find a home
        return _run(command, cwd, timeout, max_output, _file_prefix([str(Path(cwd).resolve()), scratch]), env)


def _run(command: str, cwd: Path, timeout: float, max_output: int, confine: tuple[str, ...],
         env: dict[str, str] | None) -> str:
    processes = _own_processes() + MORE_PROCESSES if os.getuid() != 0 else None  # root ignores the limit

    def limits() -> None:
        _limits(timeout)
        if processes is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))

    proc = subprocess.Popen(
        [*namespace_prefix(), *confine, "/bin/bash", "-c", command],
        cwd=cwd,
        env=env,
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


EXIT_STATUS = re.compile(r"\n?\[exit status (-?\d+)\]$")


def status_of(result: str) -> int:
    """How a skill's result says it ended: a shell command's exit status (124 when it timed out),
    -1 for an error, 0 otherwise. What statistics and predictions count as success or failure."""
    if result.startswith("ERROR"):
        return -1
    if result.startswith("timeout_error:"):
        return 124
    found = EXIT_STATUS.search(result)
    return int(found[1]) if found else 0


def register_skills(registry: SkillRegistry) -> None:
    """shell: a bash command in the workspace, confined and limited (run_shell)."""

    def bind(host: SkillHost) -> Callable[[str], str]:
        config = host.config
        return lambda command: run_shell(command, host.workspace.ensure(), config.shellTimeout,
                                         config.maxSkillOutput, confine_files=not config.allowOutsideWorkspace)

    registry.add(Skill("shell", "COMMAND", "run a bash COMMAND in the workspace (timeout, output capped)",
                       "shell-run", bind, source=__name__))
