"""Loading skill files: declarations `(skill NAME "ARGS" "HELP")` next to `(= (do NAME ...) ...)`.

A file is checked whole before any of it reaches the agent's space, so a broken file adds nothing,
is reported by file and line, and never stops the other files from loading.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mettaclaw.sexpr import Expr, SexprError, Str, Sym, read_forms


@dataclass(frozen=True)
class SkillSpec:
    name: str
    args: str
    help: str
    file: str

    @property
    def arity(self) -> int:
        return len(self.args.split())


@dataclass
class LoadReport:
    skills: dict[str, SkillSpec] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _defined_skill(node: Expr) -> str | None:
    """NAME if node is `(= (do NAME ...) body)`."""
    if len(node.items) == 3 and node.items[0] == Sym("="):
        head = node.items[1]
        if isinstance(head, Expr) and len(head.items) >= 2 and head.items[0] == Sym("do"):
            name = head.items[1]
            return name.text if isinstance(name, Sym) else None
    return None


def check_skill_file(path: Path, known: dict[str, SkillSpec], trusted: bool = False) -> tuple[dict[str, SkillSpec], str]:
    """Validate one file; returns its declarations and text, or raises ValueError('file:line: why')."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    try:
        forms = read_forms(text)
    except SexprError as err:
        raise ValueError(f"{path}: {err} (line {_error_line(text, str(err))})") from None
    declared: dict[str, SkillSpec] = {}
    defined: set[str] = set()
    for start, node in forms:
        where = f"{path}:{_line_of(text, start)}"
        if isinstance(node, Expr) and node.items and node.items[0] == Sym("skill"):
            items = node.items
            if len(items) != 4 or not isinstance(items[1], Sym) or not all(isinstance(i, Str) for i in items[2:]):
                raise ValueError(f'{where}: a declaration reads (skill NAME "ARGS" "HELP")')
            name = items[1].text
            if name in known or name in declared:
                raise ValueError(f"{where}: skill {name!r} is already declared")
            declared[name] = SkillSpec(name, items[2].value, items[3].value, str(path))  # type: ignore[union-attr]
        elif isinstance(node, Expr) and (name := _defined_skill(node)):
            defined.add(name)
        elif isinstance(node, Sym) and node.text == "!" and not trusted:
            raise ValueError(f"{where}: skill files may not run code at load time ('!')")
    for name in declared:
        if name not in defined:
            raise ValueError(f"{path}: skill {name!r} is declared but has no (= (do {name} ...) ...) definition")
    for name in defined - declared.keys() - known.keys():
        raise ValueError(f"{path}: (do {name} ...) is defined but {name!r} is not declared with (skill ...)")
    return declared, text


def _error_line(text: str, message: str) -> int:
    import re

    match = re.search(r"character (\d+)", message)
    return _line_of(text, int(match.group(1)) - 1) if match else 1


def load_skill_files(runner: Any, paths: list[Path], known: dict[str, SkillSpec], trusted: bool = False) -> LoadReport:
    """Load files in order into the runner; each bad file is skipped with its error reported.

    Only `trusted` files (the agent's own) may run code at load time with `!`.
    """
    report = LoadReport()
    for path in paths:
        try:
            declared, text = check_skill_file(path, {**known, **report.skills}, trusted)
            runner.parse_all(text)  # hyperon's own tokenizer must accept it too
        except ValueError as err:
            report.errors.append(str(err))
            continue
        except RuntimeError as err:  # hyperon's parser
            report.errors.append(f"{path}: hyperon cannot parse it: {err}")
            continue
        runner.run(text)
        report.skills.update(declared)
    return report
