"""The `metta` skill: model-written MeTTa runs in a worker process, never in the agent's own space.

hyperon cannot interrupt an evaluation and dies on some inputs (1024-child expressions), so each
call gets a fresh runner inside a separate process with a memory cap; a call that overruns its timeout
or kills the worker is reported, and the worker is restarted for the next call.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from hyperon import OperationAtom

from mettaclaw.reasoning.interpreted import make_runner
from mettaclaw.skills import SkillError
from mettaclaw.skills.registry import Skill, SkillRegistry

MAX_PROGRAM_CHARS = 20_000
# hyperon's ways out of MeTTa: into Python (py-*), to modules and files (import!, include, ...). Model
# written MeTTa gets none of them: they are refused by name before a run, and their tokens are bound to
# a refusal inside the worker, so a name built at run time (`parse "py-atom"`) reaches nothing either.
# NAL and PLN, the shipped libraries, are imported before the program runs.
ESCAPES = ("py-atom", "py-dot", "py-list", "py-dict", "py-tuple", "py-chain", "import!", "include",
           "register-module!", "git-module!", "load-ascii", "load-file!")
ESCAPE_TOKEN = re.compile(r"(?<![^\s()\"])(" + "|".join(re.escape(e) for e in ESCAPES) + r")(?![^\s()\"])")
REFUSAL = "is not available in the metta sandbox: model-written MeTTa has no access to Python, files or the OS"


def _refuse(*_: object) -> None:
    raise RuntimeError(f"refused: an escape from MeTTa {REFUSAL}")


def escape_in(program: str) -> str | None:
    """The first escape named in the program's text, if any."""
    found = ESCAPE_TOKEN.search(program)
    return found.group(1) if found else None


def serve(lib_dir: Path, memory_mb: int) -> None:
    """The worker's loop: one JSON line in (the program), one JSON line out (status, text)."""
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    out = os.fdopen(os.dup(1), "w")  # replies go here; fd 1 itself catches what programs print
    printed = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the worker)
    os.dup2(printed.fileno(), 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        program = json.loads(line)
        printed.seek(0)
        printed.truncate()
        try:
            runner = make_runner(lib_dir=lib_dir)  # a fresh runner per call, NAL and PLN imported
            for name in ESCAPES:
                runner.register_atom(name, OperationAtom(name, _refuse, unwrap=False))
            results = runner.run(program)
            reply = "\n".join(" ".join(str(atom) for atom in row) if row else "(no result)" for row in results)
            printed.seek(0)
            shown = printed.read().decode("utf-8", errors="replace")
            if REFUSAL in reply:  # an escape reached at run time (a name built with parse): no traceback
                answer = ("error", f"refused: an escape from MeTTa {REFUSAL}")
            else:
                answer = ("ok", (shown + reply) or "(nothing to evaluate: start expressions to run with !)")
        except MemoryError:
            answer = ("error", f"the program exceeded the sandbox memory cap of {memory_mb} MB")
        except Exception as err:  # hyperon reports parse and runtime errors as RuntimeError
            text = str(err).strip()
            answer = ("error", text.splitlines()[0] if text else type(err).__name__)
        out.write(json.dumps(answer) + "\n")
        out.flush()


class MettaSandbox:
    def __init__(self, lib_dir: Path, timeout: float = 10.0, memory_mb: int = 1024, max_output: int = 20_000) -> None:
        self.lib_dir = Path(lib_dir).resolve()
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.max_output = max_output
        self._proc: subprocess.Popen[str] | None = None

    def _start(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "mettaclaw.skills.sandbox", str(self.lib_dir), str(self.memory_mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )

    def _stop(self) -> None:
        """Kill the worker and everything it started (its own session: one process group)."""
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
        self._proc = None

    def run(self, program: str) -> str:
        program = program.strip()
        if not program:
            raise SkillError("no expression given")
        if len(program) > MAX_PROGRAM_CHARS:
            raise SkillError(f"program of {len(program)} characters exceeds the cap of {MAX_PROGRAM_CHARS}")
        if (escape := escape_in(program)) is not None:
            raise SkillError(f"{escape} {REFUSAL}")
        if "!" not in program:
            program = "!" + program  # a lone expression means: evaluate it
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(program) + "\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], self.timeout)
            if not ready:
                self._stop()
                raise SkillError(f"evaluation timed out after {self.timeout:g} s (sandbox restarted)")
            line = proc.stdout.readline()
            status, text = json.loads(line)
        except (OSError, ValueError):
            self._stop()
            raise SkillError("the sandbox process died on this program (too large an expression or the memory cap); "
                             "restarted") from None
        if len(text) > self.max_output:
            text = text[: self.max_output] + "\n[... metta output truncated ...]"
        if status != "ok":
            raise SkillError(text)
        return text

    def close(self) -> None:
        self._stop()


if __name__ == "__main__":
    serve(Path(sys.argv[1]), int(sys.argv[2]))


def register_skills(registry: SkillRegistry) -> None:
    """metta: MeTTa in a fresh sandbox process."""
    registry.add(Skill("metta", "S-EXPRESSION", "evaluate MeTTa in a fresh sandbox with NAL and PLN loaded, e.g. "
                       "`metta (|- ((--> a b) (stv 1 0.9)) ((--> b c) (stv 1 0.9)))`", "sandbox-run",
                       lambda host: host.sandbox.run, source=__name__))
