"""File confinement for the shell skill with Landlock, the Linux kernel's unprivileged sandbox.

Landlock (Linux 5.13+) lets a process give up file access for itself and everything it starts, with
no root, no setuid helper and no mount tricks; bubblewrap is not on every machine, the kernel feature
usually is. The rules are a list of folders and what may be done beneath each; everything else is
refused by the kernel, whatever the command does (symlinks, `..`, `/proc/self/root` included).

This file runs as a script between `unshare` and the command, with only the standard library, so
that it costs one interpreter start (`python -I -S`) and nothing of the agent is imported:

    python -I -S landlock.py --write DIR ... --read DIR ... -- /bin/bash -c COMMAND

Confinement cannot be applied in the agent's own `preexec_fn`: a Landlock-restricted process may not
mount, and `unshare --mount-proc` must.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

# syscall numbers: the same on every architecture since Linux 5.13 (the unified syscall table)
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_MAKE_AND_REMOVE = sum(1 << bit for bit in range(4, 13))  # remove dir/file, make char/dir/reg/sock/fifo/block/sym
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3 and 5
_FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # what a rule on a plain file may grant
SCOPE_SIGNAL = 1 << 1  # ABI 6: no signals to processes outside the sandbox

READ = EXECUTE | READ_FILE | READ_DIR
WRITE = READ | WRITE_FILE | _MAKE_AND_REMOVE | REFER | TRUNCATE | IOCTL_DEV


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The Landlock ABI this kernel offers, or 0 when it offers none (old kernel, disabled, not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def _handled(abi: int) -> int:
    handled = READ | WRITE
    if abi < 2:
        handled &= ~REFER
    if abi < 3:
        handled &= ~TRUNCATE
    if abi < 5:
        handled &= ~IOCTL_DEV
    return handled


def restrict(writable: list[str], readable: list[str]) -> None:
    """Confine this process and everything it starts: full access beneath `writable`, read and execute
    beneath `readable`, nothing anywhere else. Paths that do not exist are skipped. Raises OSError when
    the kernel refuses."""
    abi = abi_version()
    if abi < 1:
        raise OSError("Landlock is not available on this kernel")
    libc = _libc()
    handled = _handled(abi)
    attr = _RulesetAttr(handled, 0, SCOPE_SIGNAL if abi >= 6 else 0)
    size = ctypes.sizeof(attr) if abi >= 6 else 8  # older kernels reject fields they do not know
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for paths, access in ((readable, READ), (writable, WRITE)):
            for path in paths:
                _allow(libc, ruleset, path, access & handled)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a folder this system does not have
    try:
        if not os.path.isdir(path):
            access &= _FILE_ONLY
        rule = _PathBeneathAttr(access, fd)
        if libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                        ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)


def _main(argv: list[str]) -> None:
    """`--write DIR`, `--read DIR` (each repeatable), `--`, then the command to run confined."""
    writable: list[str] = []
    readable: list[str] = []
    while argv and argv[0] != "--":
        flag, path, *argv = argv
        (writable if flag == "--write" else readable).append(path)
    command = argv[1:]
    try:
        restrict(writable, readable)
    except OSError as exc:
        sys.stderr.write(f"shell: file confinement failed, command not run: {exc}\n")
        raise SystemExit(126) from exc
    for ignored_by_python in (signal.SIGPIPE, signal.SIGXFSZ):  # exec would pass "ignored" on to the command
        signal.signal(ignored_by_python, signal.SIG_DFL)
    os.execvp(command[0], command)


if __name__ == "__main__":
    _main(sys.argv[1:])
