"""The grounded operations MeTTa calls: thin wrappers from the turn's steps to Python objects.

Every operation returns a value, never raises into hyperon: a Python exception would become an
`(Error ...)` atom carrying a whole traceback. A `SkillError` (the model's or the user's cause) comes
back as a `SkillFailure` value; a bug in our code is logged with its traceback and becomes a brief
`SkillFailure` too, and a store damaged on disk (StoreDamaged) one saying which and what to do. `error_text`
writes every kind of failure out as `ERROR: <skill>: <cause>`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container
from typing import TYPE_CHECKING, Any

from hyperon import E, ExpressionAtom, GroundedAtom, OperationAtom, S, SymbolAtom, ValueAtom

from mettaclaw.memory import StoreDamaged
from mettaclaw.skills import SkillError, SkillFailure, skill_error
from mettaclaw.skills.registry import SkillRegistry
from mettaclaw.textutil import safe_text

if TYPE_CHECKING:
    from mettaclaw.runtime import Agent

log = logging.getLogger(__name__)


def atom_text(atom: Any) -> str:
    """A MeTTa value as the text the model reads: strings unquoted, everything else as written."""
    if isinstance(atom, GroundedAtom):
        value = atom.get_object().content
        return value if isinstance(value, str) else str(value)
    return str(atom)


def guarded(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` as a MeTTa operation: a SkillError becomes a SkillFailure, any other error one too (logged),
    and a text result is made safe for hyperon (a lone surrogate would panic it: textutil.safe_text)."""

    def op(*args: Any) -> Any:
        try:
            out = fn(*args)
            return safe_text(out, f"bridge {name}") if isinstance(out, str) else out
        except SkillError as err:
            return SkillFailure(safe_text(str(err), f"bridge {name}"))
        except StoreDamaged as err:  # a store file damaged on disk (e.g. the knowledge block's reads): its
            log.error("bridge %s: %s", name, err)  # message names the file and what to do; no traceback
            return SkillFailure(safe_text(str(err), f"bridge {name}"))
        except Exception as err:
            log.exception("bridge %s failed", name)
            return SkillFailure(safe_text(f"internal error {type(err).__name__}: {err} (details in the log)", f"bridge {name}"))

    return op


def error_text(skill: str, results: list[Any], usage: str = "", operations: Container[str] = ()) -> str | None:
    """`ERROR: <skill>: <cause>` when a skill failed: a SkillFailure from a bridge, an (Error ...) atom
    from MeTTa, a call no definition matched (then the skill's `usage`, so the model can write the
    call again rightly), or a call of one of the `operations` (the bridges) that hyperon left as it
    was, its arguments not values (`(channel-send foo)`: it was the skill's answer, nothing sent);
    None when it did its work."""
    for atom in results:
        if isinstance(atom, GroundedAtom) and isinstance(atom.get_object().content, SkillFailure):
            return skill_error(skill, atom.get_object().content.cause)
        if isinstance(atom, ExpressionAtom):
            children = atom.get_children()
            if children and children[0] == S("Error"):
                cause = " ".join(atom_text(c) for c in children[1:])
                return skill_error(skill, cause.splitlines()[0][:500] if cause else "failed")
            if len(children) >= 2 and children[0] == S("do") and children[1] == S(skill):
                return skill_error(skill, "no definition matches these arguments" + (f"; usage: {usage}" if usage else ""))
            if children and (operation := _operation_name(children[0])) in operations:
                return skill_error(skill, f"{str(atom)[:200]} was not run: {operation} takes text "
                                          '(a "quoted" string) as each argument')
    return None


def _operation_name(atom: Any) -> str | None:
    """The name of the operation `atom` is (as a symbol, or the grounded operation itself)."""
    if isinstance(atom, SymbolAtom):
        return atom.get_name()
    if isinstance(atom, GroundedAtom):
        return getattr(atom.get_object(), "name", None)
    return None


def texts(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` refusing any argument that is not text: a user skill's `(memory-remember 42)` failed as
    "internal error AttributeError: 'int' object has no attribute 'strip'", our bug to the model."""

    def op(*args: Any) -> Any:
        for arg in args:
            if not isinstance(arg, str):
                raise SkillError(f"({name} ...) takes text (a \"quoted\" string) as each argument, not {arg!r}")
        return fn(*args)

    return op


def install(agent: Agent, skills: SkillRegistry) -> set[str]:
    """Register every bridge on the agent's runner, before any MeTTa file that uses them is loaded: the
    turn's steps, and each registered skill's operation (a user skill may call those too, so each
    refuses an argument that is not text); returns their names (no skill file may give them equations
    of its own). Memory takes its own lock: no bridge holds it."""
    runner = agent.runner
    values: dict[str, Callable[..., Any]] = {
        # the turn
        "clock": agent.clock,
        "now": agent.now_text,
        "receive": agent.receive,
        "ask-llm": agent.ask_llm,
        "keep-prompt": agent.keep_prompt,
        "finish-turn": agent.finish_turn,
        # prompt sections
        "prompt-file": agent.prompt_file,
        "held-head": agent.held_head,
        "skill-list": agent.skill_list,
        "last-results": lambda: agent.last_results,
        "pinned": lambda: agent.memory.working.text_of(agent.scope),
        "history-tail": agent.history,
        "section": agent.note_section,
        "knowledge": agent.knowledge,
        "predictions": agent.predictions,
    }
    for skill in skills:
        values[skill.operation] = texts(skill.operation, skill.bind(agent))
    for name, fn in values.items():
        runner.register_atom(name, OperationAtom(name, guarded(name, fn), unwrap=True))

    def strings(*atoms: Any) -> list[str]:
        out: list[str] = []
        for atom in atoms:
            if isinstance(atom, ExpressionAtom):
                out.extend(atom_text(a) for a in atom.get_children())
            else:
                out.append(atom_text(atom))
        return out

    raw: dict[str, Callable[..., list[Any]]] = {
        "config": lambda key: [ValueAtom(getattr(agent.config, atom_text(key)))],
        "join-sections": lambda *a: [ValueAtom("\n\n".join(t for t in strings(*a) if t.strip()))],
        "join-nonempty": lambda *a: [ValueAtom("\n".join(t for t in strings(*a) if t.strip()))],
        "join-lines": lambda *a: [ValueAtom("\n".join(strings(*a)))],
        "parse-reply": lambda reply: [agent.parse_reply(atom_text(reply))],
        "run-commands": lambda: [agent.run_commands()],
    }
    for name, fn in raw.items():
        runner.register_atom(name, OperationAtom(name, fn, unwrap=False))
    return set(values) | set(raw)


def value(text: str) -> Any:
    """A Python string as the MeTTa value a skill receives."""
    return ValueAtom(safe_text(text, "a skill"))


def command_atom(skill: str, args: tuple[str, ...]) -> ExpressionAtom:
    """`(command "NAME" "arg" ...)`: inert data. The name is a string, not a symbol: hyperon turns a
    list holding `(command Error ...)` into an error and drops every command beside `(command Empty)`."""
    return E(S("command"), value(skill), *(value(a) for a in args))


def command_parts(atom: Any) -> tuple[str, list[Any]]:
    """(name, argument atoms) of a command atom."""
    children = atom.get_children()[1:]
    head = children[0]
    return (head.get_name() if isinstance(head, SymbolAtom) else atom_text(head)), children[1:]
