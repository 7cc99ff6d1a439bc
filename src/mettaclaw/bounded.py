"""Evaluating a user skill's call in the agent's own runner within a time, memory and depth bound.

hyperon 0.2.10 offers no timeout, and `MeTTa.evaluate_atom` runs to the end in Rust holding Python's
lock, so a skill that never ends hung the agent for good (signal handlers never ran). What it does
offer: a `RunnerState` stepped one interpreter step at a time from Python (about 3 µs a step), and the
`pragma! max-stack-depth` that the runner honours (`evaluate_atom` ignores it), which ends a runaway
recursion with `StackOverflow` before its stack eats the memory. So the call is stepped here: between
steps the clock, the resident memory and the stop flag are looked at. A user skill still runs in the
agent's runner, so it may call the Python bridges (`memory-remember`, `channel-send`) as before.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from dataclasses import dataclass

import hyperonpy as hp
from hyperon import Atom, MeTTa, RunnerState, S

MEMORY_EVERY = 1024  # steps between looks at the resident memory (a read of /proc: ~10 µs)


@dataclass(frozen=True)
class Bounds:
    seconds: float
    memory_mb: int  # growth of the process's resident memory during the call
    stack_depth: int  # hyperon's interpreter stack (a recursion level costs 30-40 frames)


class LimitExceeded(Exception):
    """The call was stopped; the message names the limit, for the model and the skill's author."""


def resident_mb() -> float:
    """The process's resident memory now (Linux /proc), else its peak so far (which only grows, so a
    growth past the cap is still seen)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 1024


def _runner_state(runner: MeTTa, atom: Atom) -> RunnerState:
    """A RunnerState that evaluates `!atom` (without the `!` the atom would be added to the space).
    RunnerState's own constructor takes program text only, which would mean printing the arguments
    as MeTTa and reading them back."""
    state = RunnerState.__new__(RunnerState)
    state.parser = None
    state.cstate = hp.runner_state_new_with_atoms(runner.cmetta, hp.atom_vec_from_list([S("!"), atom]))
    return state


def evaluate_bounded(runner: MeTTa, atom: Atom, bounds: Bounds, stopping: threading.Event) -> list[Atom]:
    """The results of evaluating `atom`, or LimitExceeded when it overran a bound or the agent is
    stopping (Ctrl-C, SIGTERM: the handler runs between steps, so the call ends at once)."""
    runner.run(f"!(pragma! max-stack-depth {bounds.stack_depth})")
    try:
        state = _runner_state(runner, atom)
        deadline = time.monotonic() + bounds.seconds
        memory_cap = resident_mb() + bounds.memory_mb
        steps = 0
        while not state.is_complete():
            state.run_step()
            steps += 1
            if stopping.is_set():
                raise LimitExceeded("stopped: the agent is stopping")
            if time.monotonic() > deadline:
                raise LimitExceeded(f"stopped after {bounds.seconds:g} s (skillTimeout); a loop that does not end?")
            if steps % MEMORY_EVERY == 0 and resident_mb() > memory_cap:
                raise LimitExceeded(f"stopped: it took more than {bounds.memory_mb} MB (skillMemoryMB)")
        results = state.current_results()
    finally:
        # the agent's own turn runs without a depth limit (0, hyperon's default)
        runner.run("!(pragma! max-stack-depth 0)")
    found = results[0] if results else []
    if any(_stack_overflow(r) for r in found):
        raise LimitExceeded(f"stopped: its evaluation went deeper than skillStackDepth ({bounds.stack_depth} "
                            "interpreter frames); a recursion that does not end, or one too deep")
    return found


def _stack_overflow(atom: Atom) -> bool:
    """(Error ... StackOverflow), hyperon's result of a call past max-stack-depth."""
    children = getattr(atom, "get_children", lambda: [])()
    return len(children) >= 2 and children[0] == S("Error") and children[-1] == S("StackOverflow")
