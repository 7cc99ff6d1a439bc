"""The agent: its parts, the Python side of each turn step, and the driver that calls one turn at a time.

MeTTa (metta/loop.metta) decides what happens in a turn; this module holds the state the steps share
(the turn's message, commands, results and errors) and runs the driver loop, which never recurses.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hyperon import E, Environment, MeTTa, S

from mettaclaw import bridges
from mettaclaw.bounded import Bounds, LimitExceeded, evaluate_bounded
from mettaclaw.channels import Channel, ChannelGone
from mettaclaw.config import PROJECT_ROOT, Config
from mettaclaw.llm import LLM, Backoff, LLMError, call_in_thread
from mettaclaw.memory import MemoryAPI, scopes, senders
from mettaclaw.messages import shown
from mettaclaw.parser import Command, parse_reply
from mettaclaw.skillfiles import SKILL_NAME, LoadReport, SkillSpec, load_skill_files, user_skill_files
from mettaclaw.skills import skill_error
from mettaclaw.skills.files import Workspace
from mettaclaw.skills.memory import for_memory as memory_skills_for
from mettaclaw.skills.registry import SkillRegistry, builtin_skills
from mettaclaw.skills.sandbox import MettaSandbox
from mettaclaw.skills.shell import status_of
from mettaclaw.textutil import cap_head, cap_tail, now_text, one_line, safe_text
from mettaclaw.turn_state import TurnOutcome, TurnState
from mettaclaw.turns import TurnLog, clip

log = logging.getLogger(__name__)

CORE_FILES = ("prompt.metta", "loop.metta")  # after the registry's skills (skills/registry.py)
CHARS_PER_TOKEN = 16  # a reply past llmMaxTokens x this is no model's (a token is about 4 characters)
SKIPPED_SHOWN = 10  # commands past maxCommands named in the error; the rest counted


class AgentFunctions:
    """The functions no user skill file may give equations: those of the agent's own MeTTa files, its
    bridges, and every MeTTa builtin (anything the runner already knows a type for, e.g. `if`,
    `format-args`), since the turn is written with them."""

    def __init__(self, names: set[str], runner: MeTTa) -> None:
        self.names, self.runner = names, runner

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name in self.names:
            return True
        try:
            found = self.runner.run(f"!(get-type {name})")
        except Exception:  # a name hyperon cannot even read back is no helper to allow
            return True
        return any(str(t) != "%Undefined%" for results in found for t in results)


class Agent:
    """The agent over one memory (`open_memory`: a Memory, or a RemoteMemory on a memory server), which its
    caller opens and closes. It is the SkillHost of its skills (skills/registry.py)."""

    def __init__(
        self,
        config: Config,
        llm: LLM,
        channel: Channel,
        memory: MemoryAPI,
        *,
        clock: Callable[[], float] = time.time,
        root: Path = PROJECT_ROOT,
        skill_registry: SkillRegistry | None = None,
    ) -> None:
        self.config = config
        self.llm = llm
        self.channel = channel
        self.memory = memory
        self.clock = clock
        self.root = root
        self.memory_skills = memory_skills_for(memory, self.now_text, config.maxRecallItems,
                                               config.maxEpisodeRecallLines, lenses=config.lenses)
        workspace = config.folder("workspaceDir") if config.workspaceDir else config.memory_path("workspace")
        self.workspace = Workspace(workspace, config.allowOutsideWorkspace, config.maxSkillOutput)
        self.sandbox = MettaSandbox(root / "lib", config.mettaTimeout, config.mettaMemoryMB, config.maxSkillOutput)
        self.turn_state = TurnState()
        self.turn_log = TurnLog(config.memory_path("turns.jsonl"), config.turnLogMB)
        self.turns_logged = 0
        self.stopping = threading.Event()  # set by Ctrl-C (run.py) or stop(): no new model call, no new turn
        self._results: dict[str, str] = {}  # the last turn's results in each scope (LAST_SKILL_USE_RESULTS)
        self.last_commands: list[Command] = []  # the last turn's, for PREDICTIONS
        self.last_sent: str | None = None
        self._head: tuple[str, str, dict[str, int]] | None = None  # (prompt.txt's text, the head, its section sizes)
        self.backoff = Backoff()  # failed model calls in a row: the loop waits longer after each
        self.runner = MeTTa(env_builder=Environment.custom_env(working_dir=str(root / "metta"), include_paths=[str(root / "lib")]))
        self.skill_registry = skill_registry if skill_registry is not None else builtin_skills()
        self._bridges = bridges.install(self, self.skill_registry)
        self.user_skills: set[str] = set()  # run within `skill_bounds`: their MeTTa is nobody's we checked
        self.skill_bounds = Bounds(config.skillTimeout, config.skillMemoryMB, config.skillStackDepth)
        self.skills_notice: str | None = None  # why no user skill was loaded, when skillsDir is no folder
        self.skills, self.skill_errors = self._load_metta()
        if self.skill_errors:  # for whoever's turn comes first
            self._results[""] = "SKILL FILE ERRORS (these files were not loaded):\n" + "\n".join(self.skill_errors)
        self.runner.run("!(startup)")

    # --- loading
    def _load_metta(self) -> tuple[dict[str, SkillSpec], list[str]]:
        metta_dir = self.root / "metta"
        builtin = ("built-in skills", self.skill_registry.metta())
        core: LoadReport = load_skill_files(self.runner, [builtin, *(metta_dir / f for f in CORE_FILES)], {},
                                            trusted=True)
        if core.errors:
            raise RuntimeError("the agent's own MeTTa files are broken: " + "; ".join(core.errors))
        user_files, self.skills_notice = user_skill_files(self.config.folder("skillsDir"))
        user = load_skill_files(self.runner, user_files, core.skills,
                                protected=AgentFunctions(core.functions | self._bridges, self.runner))
        for error in user.errors:
            log.error("skill file not loaded: %s", error)
        self.user_skills = set(user.skills)
        return {**core.skills, **user.skills}, user.errors

    # --- the driver
    def turn(self) -> TurnOutcome:
        """Run one turn: one evaluation of (turn) in MeTTa."""
        self.turn_state = TurnState()
        self.memory.tick()
        result = self.runner.run("!(turn)")
        outcome = str(result[0][0]) if result and result[0] else "(no result)"
        acted = outcome != "idle"
        if outcome not in ("idle", '"acted"'):
            # a bug in the MeTTa turn: record what we have, so no message or command is lost
            log.error("turn did not complete: %s", outcome[:2000])
            self.turn_state.error(f"ERROR: internal: the turn did not complete ({outcome[:300]})")
            self.finish_turn("", bool(self.turn_state.messages))
        state = self.turn_state
        return TurnOutcome(acted, state.commands, state.results, state.errors, state.episode_id, state.episode_ids,
                           state.message_ids)

    def run(self, max_turns: int | None = None) -> int:
        """Call turns until max_turns, `stop()`, or the end of input: once the channel is closed (Ctrl-D,
        the end of a pipe), the first turn that brings no new message is the last, so the model
        answers what came last but is not called on and on with nobody there."""
        turns = 0
        while (max_turns is None or turns < max_turns) and not self.stopping.is_set():
            self.turn()
            turns += 1
            if self.channel.closed and not self.turn_state.messages:
                break
            self._pause()
        return turns

    def _pause(self) -> None:
        """sleepInterval between turns, and after failed model calls the backoff's wait, which a new
        message or the end of input cuts short: the turns a message grants wait for a broken endpoint,
        the person does not (each message they send is tried at once, and Ctrl-D ends the agent)."""
        ends = time.monotonic() + max(self.config.sleepInterval, self.backoff.delay)
        self.stopping.wait(self.config.sleepInterval)
        while not self.stopping.is_set() and not self.channel.pending() and (left := ends - time.monotonic()) > 0:
            self.stopping.wait(min(0.1, left))

    def stop(self) -> None:
        """End the run soon (safe from a signal handler): a model call under way is abandoned, the turn
        is recorded as it stands, and `run` returns."""
        self.stopping.set()

    def close(self) -> None:
        """Keep what was said but never read, stop the sandbox and the turn log; memory is its
        opener's to close (after this)."""
        try:
            self._keep_unread()
        finally:
            self.sandbox.close()
            self.turn_log.close()

    def _keep_unread(self) -> None:
        """Record the messages still queued in the channel as said and not answered. Why: a line typed
        while the last turn's model call ran, then Ctrl-C, SIGTERM or maxTurns, ended the agent with
        the line in the queue, and it never reached the trace, as if it had not been said."""
        try:
            messages = self.channel.receive()
            if messages:
                self.memory.record_turn(self.now_text(), messages, [],
                                        "ERROR: not answered: the agent stopped before reading this")
        except Exception:  # closing goes on; the log says what was not kept
            log.exception("the messages that arrived as the agent stopped could not be recorded")

    @property
    def scope(self) -> str:
        """Whose turn this is (who spoke last): what the prompt shows and the memory skills read."""
        return self.memory_skills.scope

    @property
    def last_results(self) -> str:
        """What the commands of the last turn in this scope returned: bob's turn is not shown what
        alice's query found."""
        return self._results.get(self.scope, self._results.get("", ""))

    @last_results.setter
    def last_results(self, text: str) -> None:
        self._results[self.scope] = text

    def history(self) -> str:
        """The trace's last records that this turn's scope may read (HISTORY)."""
        return self.memory.trace_tail(self.config.maxHistory, self.memory_skills.visible)

    # --- turn steps (called from MeTTa through bridges)
    def now_text(self) -> str:
        return now_text(self.clock())

    def prompt_file(self) -> str:
        return (self.root / "metta" / "prompt.txt").read_text(encoding="utf-8").strip()

    def held_head(self) -> str:
        """The prompt's first sections (instructions, skills, output format) as MeTTa's (prompt-head)
        assembles them, kept while prompt.txt's text stays the same: the skills and the configuration
        are fixed at start-up, so only the file can change them. Their sizes are noted for the turn
        log each turn, as if they had been assembled again."""
        text = self.prompt_file()
        if self._head is None or self._head[0] != text:
            before = set(self.turn_state.sections)
            head = "\n".join(bridges.atom_text(a) for a in self.runner.evaluate_atom(E(S("prompt-head"))))
            self._head = (text, head, {k: v for k, v in self.turn_state.sections.items() if k not in before})
        else:
            self.turn_state.sections.update(self._head[2])
        return self._head[1]

    def skill_list(self) -> str:
        """One line a declared skill, from the (skill NAME "ARGS" "HELP") declarations as loaded."""
        return "\n".join(s.usage for s in self.skills.values())

    def receive(self) -> str:
        """This turn's messages, as the model reads them ("" when none came: only that is "no new message"),
        cut at `maxMessage` with a marker: a pasted 1 MB log would overflow any model's context, and the
        failed call would leave the person unanswered. The trace and the index keep the messages whole."""
        self.turn_state.messages = self.channel.receive()
        if self.turn_state.messages:  # a turn without a message goes on with whoever spoke last
            who, channel = senders(self.turn_state.messages)
            self.memory_skills.scope = scopes.of_episode(who, channel)
            self.memory_skills.shared = frozenset({scopes.of_episode((), channel)}) - {scopes.DEFAULT}
            self.memory_skills.asker = who[0] if len(who) == 1 else None
        if self.scope != self.turn_state.prompt_scope:  # the prompt was built for someone else's turn
            self.turn_state.sections = {}
            self.turn_state.prompt = "\n".join(bridges.atom_text(a) for a in self.runner.evaluate_atom(E(S("build-prompt"))))
            self.turn_state.prompt_scope = self.scope
        return cap_head(shown(self.turn_state.messages), self.config.maxMessage,
                        "message (kept whole in the trace)")

    def knowledge(self, message: str) -> str:
        block = self.memory.knowledge(message, self.config.knowledgeChars, self.memory_skills.visible,
                                      self.config.knowledgeMs)
        self.turn_state.knowledge_chars = len(block)
        built = self.memory.last_context
        self.turn_state.knowledge_level = None if built is None else built.level
        return block

    def predictions(self, message: str) -> str:
        """The PREDICTIONS block: what was done for earlier requests meaning the same as this turn's
        messages, and what the actions named by the message and the pins, or the last turn's commands,
        led to before (memory.predictions; "" without evidence)."""
        context = f"{message}\n{self.memory.working.text_of(self.scope)}"
        said = [m.shown() for m in self.turn_state.messages] if message else []
        block = self.memory.predictions(context, self.last_commands, self.now_text(), self.memory_skills.visible,
                                        said)
        self.turn_state.sections["PREDICTIONS"] = len(block)
        return block

    def note_section(self, title: str, text: str) -> str:
        """A prompt section as the model reads it, its size noted for the turn log."""
        self.turn_state.sections[title.split(" (")[0] or "instructions"] = len(text)
        return f"{title}:\n{text}" if title else str(text)

    def keep_prompt(self, prompt: str) -> str:
        self.turn_state.prompt, self.turn_state.prompt_scope = prompt, self.scope
        return "prompt-held"

    def ask_llm(self, message: str) -> str:
        """The model's reply; a failed call is reported as a model failure and the reply is empty, so
        no error text is ever read as if the model had written it."""
        state = self.turn_state
        state.message_chars, state.message = len(message), message
        began = time.perf_counter()
        try:
            reply = safe_text(self._complete(state.prompt, message), "the model")
            limit = CHARS_PER_TOKEN * self.config.llmMaxTokens
            if len(reply) > limit:  # no model keeping to llmMaxTokens writes this much: a broken endpoint
                self.turn_state.error(f"ERROR: your reply was {len(reply):,} characters, more than llmMaxTokens "
                                      f"({self.config.llmMaxTokens}) allow; only its first {limit:,} were read")
                reply = reply[:limit]
            state.reply = reply
            state.tokens = getattr(self.llm, "last_usage", None)
            self.backoff.succeeded()
            return state.reply
        except LLMError as err:
            log.warning("model call failed: %s", err)
            self.model_failed(str(err), err.retry_after)
        except Exception as err:  # a provider's own bug must not become the model's words either
            log.exception("model call failed")
            self.model_failed(f"{type(err).__name__}: {err}")
        finally:
            state.model_ms = 1000 * (time.perf_counter() - began)
        return ""

    def model_failed(self, reason: str, asked: float | None = None) -> None:
        """A failed call goes to the next prompt, and to the person in one line when it is the first in
        a row or a new reason: they were told nothing, so a wrong key or a down endpoint looked like
        an agent that ignored them. The console provider's person is the model and sees it there."""
        self.turn_state.error(f"ERROR: model call failed: {reason}")
        if self.stopping.is_set():  # abandoned for Ctrl-C: no failure of the endpoint's
            return
        if self.backoff.failed(reason, asked) and self.llm.name != "console":
            one_line = clip(" ".join(reason.split()), 300)  # an error page's HTML comes with its line ends
            try:
                self.channel.notice(f"model call failed: {one_line}; the next call waits {self.backoff.delay:g} s")
            except ChannelGone:
                self.stop()

    def _complete(self, prompt: str, message: str) -> str:
        """The model call in a daemon thread, waited for here, so that `stop()` ends the wait at once."""
        if self.stopping.is_set():
            raise LLMError("not called: the agent is stopping")
        return call_in_thread(lambda: self.llm.complete(prompt, message), stopping=self.stopping)

    def parse_reply(self, reply: str) -> Any:
        arity = {name: spec.arity for name, spec in self.skills.items()}
        parsed = parse_reply(reply, self.config.maxCommands, arity, skills=self.skills)
        for err in parsed.errors:
            self.turn_state.error(f"ERROR: could not read your reply: {err}")
        if parsed.skipped:
            more = len(parsed.skipped) - SKIPPED_SHOWN
            self.turn_state.error(
                f"ERROR: only the first {self.config.maxCommands} commands run (maxCommands); skipped: "
                + " ".join(c.brief(80) for c in parsed.skipped[:SKIPPED_SHOWN]) + (f" and {more} more" if more > 0 else "")
            )
        # a refusal waits in its place among the commands: said here, it came before the results of
        # the commands written above it, in the results and in the trace
        self.turn_state.waiting = [(c, refusal) if (refusal := self._refusal(c)) else bridges.command_atom(c.skill, c.args)
                                   for c in parsed.commands]
        return S("parsed")

    def _refusal(self, command: Command) -> str | None:
        """Why a command is not run, decided before it reaches hyperon: more arguments than its skill
        takes, or any unknown skill's (argument counts stay small, so no huge expression reaches it)."""
        spec = self.skills.get(command.skill)
        if spec is not None and len(command.args) > max(spec.arity, 1):
            return skill_error(spec.name, f"takes {spec.arity} argument(s) ({spec.args}), got {len(command.args)}")
        if spec is None and len(command.args) > 1:
            return self._unknown(command.skill)
        return None

    def run_commands(self) -> Any:
        """Run the parsed commands in order, each through its MeTTa `do` definition; `done`. A bug of ours
        in one (not the model's) is logged and reported, and the next command runs.

        The commands wait here, not in MeTTa: hyperon copies every value a step carries, each copy of a
        Python value a call into Python, so a list carried through the loop multiplies the copies a
        turn makes. The loop is here too: stepping it in MeTTa costs a bridge call and two equations a
        command (docs/decisions/0011)."""
        while self.turn_state.waiting:
            command = self.turn_state.waiting.pop(0)
            if isinstance(command, tuple):  # refused when parsed (_refusal)
                refused, why = command
                self.turn_state.commands.append(refused)
                self.turn_state.outcomes.append((-1, 0.0))
                self.turn_state.error(f"{refused.brief()} -> {why}")
                continue
            try:
                self.run_skill(command)
            except Exception as err:  # a bug of ours, not the model's: logged, reported, and the next command runs
                log.exception("running %s failed", command)
                self.turn_state.error(f"ERROR: internal error while running {command}: {type(err).__name__}: {err}")
        return S("done")

    def _unknown(self, name: str) -> str:
        """Its name with what cannot be seen escaped: `se\\u200bnd` read as `send`, an unknown skill
        the model could not tell from the one it meant."""
        short = name if len(name) <= 60 else name[:60] + "..."
        named = one_line(short)
        hidden = " (its name holds characters that cannot be seen, shown escaped)" if named != short else ""
        return skill_error(named, f"unknown skill{hidden}; nothing was run. Skills: {', '.join(sorted(self.skills))}")

    def run_skill(self, command_atom: Any) -> str:
        name, arg_atoms = bridges.command_parts(command_atom)
        command = Command(name, tuple(bridges.atom_text(a) for a in arg_atoms))
        self.turn_state.commands.append(command)
        began = time.perf_counter()
        text = self._invoke(name, arg_atoms)
        ms = round(1000 * (time.perf_counter() - began), 2)
        self.turn_state.timings.append({"skill": name, "args": [clip(a, 500) for a in command.args], "result": clip(text),
                                        "ms": ms})
        self.turn_state.outcomes.append((status_of(text), ms))
        line = f"{command.brief()} -> {text}"
        if text.startswith("ERROR"):
            self.turn_state.errors.append(line)
        self.turn_state.results.append(line)
        return text

    def _invoke(self, name: str, arg_atoms: list[Any]) -> str:
        """Run one skill through its MeTTa definition; the result text, or `ERROR: <skill>: <cause>`."""
        if name not in self.skills or not SKILL_NAME.match(name):
            return self._unknown(name)
        call = E(S("do"), S(name), *arg_atoms)
        if name in self.user_skills:
            # a user skill may loop or recurse without end: stepped within bounds, so the agent goes on
            # (and Ctrl-C still ends it); the agent's own skills run whole, as they always end
            try:
                results = evaluate_bounded(self.runner, call, self.skill_bounds, self.stopping)
            except LimitExceeded as err:
                return skill_error(name, str(err))
        else:
            results = self.runner.evaluate_atom(call)
        text = bridges.error_text(name, results, self.skills[name].usage, self._bridges) or "\n".join(bridges.atom_text(r) for r in results)
        if name in self.user_skills:
            # held to maxSkillOutput as the built-in skills' own sides are (they cap what they return)
            text = cap_head(text, self.config.maxSkillOutput, "skill output")
        return text or "(no result)"

    def use_skill(self, name: str, *args: str) -> str:
        """Run a skill as the model would, outside any turn (nothing is recorded): for benchmarks and
        tools that ask the agent's own skills, such as `query`."""
        return self._invoke(name, [bridges.value(a) for a in args])

    def finish_turn(self, message: str, new: bool) -> str:
        state = self.turn_state
        state.new = bool(new)
        if state.new or state.commands:
            errors = "; ".join(state.errors) or None
            record = self.memory.record_turn(self.now_text(), state.messages if new else [], state.commands, errors,
                                             state.outcomes)
            state.episode_id, state.episode_ids, state.message_ids = record.turn_id, record.episode_ids, record.message_ids
        self.last_results = cap_tail("\n".join(state.results), self.config.maxFeedback)
        if state.commands:
            self.last_commands = list(state.commands)
        self._log_turn(state)
        return "acted"

    def _log_turn(self, state: TurnState) -> None:
        """One line in memory/turns.jsonl: what the model saw and did, and how long each step took."""
        self.turns_logged += 1
        self.turn_log.write({
            "turn": self.turns_logged, "time": self.now_text(), "episode_id": state.episode_id,
            "messages": [{"who": m.who, "channel": m.channel, "text": clip(m.text)} for m in state.messages],
            "prompt_chars": len(state.prompt), "prompt_sections": state.sections,
            "message_chars": state.message_chars, "model_message": clip(state.message),
            "knowledge_chars": state.knowledge_chars,
            "knowledge_level": state.knowledge_level,
            "reply": clip(state.reply), "model_ms": None if state.model_ms is None else round(state.model_ms, 1),
            "tokens": state.tokens, "commands": state.timings, "errors": [clip(e, 1000) for e in state.errors],
            "turn_ms": round(1000 * (time.perf_counter() - state.started), 1)})
