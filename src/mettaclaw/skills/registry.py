"""The one registry of skills. A skill is declared once: what the model reads of it (its name, arguments
and help), the MeTTa that runs it, and the Python side that MeTTa calls.

Built-in skills register exactly as another package's would: each module named in BUILTIN has a
`register_skills(registry)` function, and the agent builds its registry from them. From the registry
it generates each skill's MeTTa (`(skill NAME "ARGS" "HELP")` and its `(= (do NAME ...) ...)`
definitions, loaded like any skill file), installs each Python side as a grounded operation, and lists
the skills in the prompt in the order they were registered. Why generated: a skill's help, its MeTTa
and its Python lived in up to five places (two MeTTa files, the bridge table, the text-operation list,
the memory skills' dispatch), and adding one meant editing each.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mettaclaw.sexpr import quote

if TYPE_CHECKING:
    from mettaclaw.channels import Channel
    from mettaclaw.config import Config
    from mettaclaw.memory import MemoryAPI
    from mettaclaw.skills.files import Workspace
    from mettaclaw.skills.sandbox import MettaSandbox

# the modules whose skills every agent has, in the order the prompt lists them
BUILTIN = ("mettaclaw.skills.turn", "mettaclaw.skills.memory", "mettaclaw.skills.reasoning",
           "mettaclaw.skills.files", "mettaclaw.skills.shell", "mettaclaw.skills.sandbox")
SKILL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_\-!?|~]*$")  # what the reply parser reads as a skill name
OPERATION_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)+$")  # `memory-query`: never a skill's own name

Operation = Callable[..., str]


class MemorySkillRunner(Protocol):
    """The memory skills of one agent (skills/memory.py): local, or run on a memory server."""

    scope: str
    asker: str | None

    @property
    def visible(self) -> frozenset[str]: ...

    def run(self, skill: str, arg: str) -> str: ...


class SkillHost(Protocol):
    """What a skill's Python side may use of the agent that runs it: the seam between the MeTTa turn and
    Python, written down (runtime.Agent is the one host)."""

    config: Config
    channel: Channel
    memory: MemoryAPI
    memory_skills: MemorySkillRunner
    workspace: Workspace
    sandbox: MettaSandbox
    last_sent: str | None  # the agent's last message (`send` drops an exact repeat)

    @property
    def scope(self) -> str: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class Skill:
    """One skill: `args` names its arguments for the model (one word each, `PATH TEXT`; "" takes none),
    `operation` is the grounded operation its MeTTa calls with them, `bind` makes that operation's
    Python side for one agent, and `optional` also defines the skill with no argument (given as "")."""

    name: str
    args: str
    help: str
    operation: str
    bind: Callable[[SkillHost], Operation]
    optional: bool = False
    source: str = ""  # the module that registered it, named in errors and in the skill's SkillSpec

    def __post_init__(self) -> None:
        if not SKILL_NAME.match(self.name):
            raise ValueError(f"skill name {self.name!r} is not allowed: ASCII, a letter then letters, digits or _-!?|~")
        if not OPERATION_NAME.match(self.operation):
            raise ValueError(f"skill {self.name!r}: operation {self.operation!r} is not lower-case words joined by '-'")
        if not " ".join(self.help.split()):
            raise ValueError(f"skill {self.name!r} has no help text; the model knows what a skill does only from it")

    def metta(self) -> str:
        """Its declaration and definitions, as a skill file would write them."""
        params = [f"${re.sub(r'[^a-z0-9]+', '_', word.lower()).strip('_') or 'arg'}" for word in self.args.split()]
        lines = [f"(skill {self.name} {quote(' '.join(self.args.split()))} {quote(' '.join(self.help.split()))})"]
        if self.optional:
            lines.append(f'(= (do {self.name}) ({self.operation} ""))')
        lines.append(f"(= (do {' '.join([self.name, *params])}) ({' '.join([self.operation, *params])}))")
        return "\n".join(lines)


class SkillRegistry:
    """Skills by name, in the order registered; a name or an operation taken twice is refused."""

    def __init__(self) -> None:
        self._skills: dict[str, Skill] = {}

    def add(self, skill: Skill) -> None:
        if skill.name in self._skills:
            raise ValueError(f"skill {skill.name!r} is registered twice ({self._skills[skill.name].source} "
                             f"and {skill.source})")
        if taken := next((s for s in self._skills.values() if s.operation == skill.operation), None):
            raise ValueError(f"operation {skill.operation!r} of skill {skill.name!r} is skill {taken.name!r}'s")
        self._skills[skill.name] = skill

    def __iter__(self) -> Iterator[Skill]:
        return iter(list(self._skills.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._skills

    def __len__(self) -> int:
        return len(self._skills)

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name)

    def operations(self) -> set[str]:
        return {s.operation for s in self._skills.values()}

    def metta(self) -> str:
        """Every skill's MeTTa, in order: the text the agent loads as its built-in skill file."""
        return "\n\n".join(s.metta() for s in self._skills.values()) + "\n"


def builtin_skills(modules: tuple[str, ...] = BUILTIN) -> SkillRegistry:
    """A registry holding the skills of `modules` (each with `register_skills(registry)`), in order."""
    registry = SkillRegistry()
    for name in modules:
        importlib.import_module(name).register_skills(registry)
    return registry
