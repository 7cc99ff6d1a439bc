"""Loading skill files: declarations `(skill NAME "ARGS" "HELP")` next to `(= (do NAME ...) ...)`.

A file is checked whole before any of it reaches the agent's space, so a broken file adds nothing,
is reported by file and line, and never stops the other files from loading.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mettaclaw.sexpr import Expr, Node, SexprError, Str, Sym, read_forms

# what the runtime will call: a name outside it was listed in the prompt but answered "unknown skill"
SKILL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_\-!?|~]*$")
# hyperon 0.2.10 kills the process on an expression of 1,023 items evaluated (1,024 added to a space),
# and overflows the stack adding one form of tens of thousands of atoms, with no file or line named
# (docs/decisions/0018). Kept well below both.
MAX_ITEMS, MAX_FORM_ATOMS = 1000, 20_000


@dataclass(frozen=True)
class SkillSpec:
    name: str
    args: str
    help: str
    file: str

    @property
    def arity(self) -> int:
        return len(self.args.split())

    @property
    def usage(self) -> str:
        """How the model is told of the skill: in the skill list, and again when a call matched none
        of its definitions."""
        return f"{' '.join(filter(None, (self.name, self.args)))} : {self.help}"


@dataclass
class LoadReport:
    skills: dict[str, SkillSpec] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    functions: set[str] = field(default_factory=set)  # every function the loaded files define


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


def _defined_function(node: Expr) -> str | None:
    """F if node is `(= (F ...) body)` or `(= F body)`."""
    if len(node.items) == 3 and node.items[0] == Sym("="):
        head = node.items[1]
        if isinstance(head, Expr) and head.items and isinstance(head.items[0], Sym):
            return head.items[0].text
        if isinstance(head, Sym):
            return head.text
    return None


def _typed_name(node: Node) -> str | None:
    """NAME if node is a type declaration `(: NAME TYPE)` (or a subtype one, `(:< NAME TYPE)`)."""
    if isinstance(node, Expr) and len(node.items) == 3 and node.items[0] in (Sym(":"), Sym(":<")):
        name = node.items[1]
        return name.text if isinstance(name, Sym) else None
    return None


def check_skill_file(path: Path, known: dict[str, SkillSpec], trusted: bool = False,
                     protected: Container[str] = frozenset()) -> tuple[dict[str, SkillSpec], str, set[str]]:
    """Validate one file; returns its declarations, text and the functions it defines, or raises
    ValueError('file:line: why'). An untrusted file may add skills and helpers of its own only: an
    equation for one of the agent's `protected` functions (its turn, its prompt) or for another
    file's skill would rewrite the agent, so it is refused."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except OSError as err:  # a broken link, a folder named *.metta, no permission: this file only, not start-up
        raise ValueError(f"{path}: cannot be read ({err.strerror or err})") from None
    declared, functions = check_skill_text(text, str(path), known, trusted, protected)
    return declared, text, functions


def check_skill_text(text: str, path: str, known: dict[str, SkillSpec], trusted: bool = False,
                     protected: Container[str] = frozenset()) -> tuple[dict[str, SkillSpec], set[str]]:
    """`check_skill_file` of a text (`path` names where it comes from): its declarations and functions."""
    try:
        forms = read_forms(text)
    except SexprError as err:
        raise ValueError(f"{path}: {err} (line {_error_line(text, str(err))})") from None
    declared: dict[str, SkillSpec] = {}
    defined: set[str] = set()
    functions: set[str] = set()
    line, counted = 1, 0
    for start, node in forms:
        # counted from the last form on: counting from the top for each form is quadratic in the file
        line, counted = line + text.count("\n", counted, start), start
        where = f"{path}:{line}"
        nodes = list(_nodes(node))
        _check_size(nodes, where)
        if isinstance(node, Expr) and node.items and node.items[0] == Sym("skill"):
            items = node.items
            if len(items) != 4 or not isinstance(items[1], Sym) or not all(isinstance(i, Str) for i in items[2:]):
                raise ValueError(f'{where}: a declaration reads (skill NAME "ARGS" "HELP")')
            name = items[1].text
            if not SKILL_NAME.match(name):
                raise ValueError(f"{where}: skill name {name!r} is not allowed: a skill name is ASCII, a letter "
                                 "then letters, digits or _-!?|~")
            if name in known or name in declared:
                raise ValueError(f"{where}: skill {name!r} is already declared")
            # one line a skill in the prompt's list: a help text over two lines showed its second line
            # there as if it were a skill of its own
            args, help_text = (" ".join(i.value.split()) for i in items[2:])  # type: ignore[union-attr]
            if not help_text:
                raise ValueError(f"{where}: skill {name!r} has no help text; the model knows what a skill does "
                                 "only from it")
            declared[name] = SkillSpec(name, args, help_text, str(path))
        elif isinstance(node, Expr) and (name := _defined_skill(node)):
            if not trusted and name in known:
                raise ValueError(f"{where}: (do {name} ...) redefines the skill {name!r} of {known[name].file}; "
                                 "a skill file may define only the skills it declares")
            defined.add(name)
        elif isinstance(node, Expr) and (function := _defined_function(node)):
            if not trusted and function.startswith("$"):
                raise ValueError(f"{where}: an equation whose head is a variable ({function}) would answer for "
                                 "every function of the agent; refused")
            if not trusted and function in protected:
                raise ValueError(f"{where}: ({function} ...) is one of the agent's own functions; "
                                 "skill files may add skills and helpers, not change the agent")
            functions.add(function)
        elif not trusted and (typed := _typed_name(node)) is not None:
            if typed.startswith("$"):
                raise ValueError(f"{where}: a type declaration for a variable ({typed}) would type every atom; refused")
            if typed == "do" or typed in protected:  # `do` is every skill's head, declared by none
                # `(: do (-> Symbol Atom Atom))` left every built-in skill unevaluated: `send` sent nothing
                # and `remember` stored nothing, each answering its own call as text, and nothing said why
                raise ValueError(f"{where}: (: {typed} ...) gives a type to one of the agent's own functions; "
                                 "skill files may type their own helpers only")
        elif isinstance(node, Sym) and node.text == "!" and not trusted:
            raise ValueError(f"{where}: skill files may not run code at load time ('!')")
        if not trusted and Sym("pragma!") in nodes:
            raise ValueError(f"{where}: (pragma! ...) would change the interpreter's settings, such as the "
                             "depth limit a skill runs under (skillStackDepth); refused")
    for name in declared:
        if name not in defined:
            raise ValueError(f"{path}: skill {name!r} is declared but has no (= (do {name} ...) ...) definition")
    for name in defined - declared.keys() - known.keys():
        raise ValueError(f"{path}: (do {name} ...) is defined but {name!r} is not declared with (skill ...)")
    return declared, functions


def _nodes(node: Node) -> Iterator[Node]:
    """The form and every atom in it, however deeply nested (the reader's depth limit bounds the recursion)."""
    yield node
    if isinstance(node, Expr):
        for item in node.items:
            yield from _nodes(item)


def _check_size(nodes: list[Node], where: str) -> None:
    """Refuse a form hyperon would die on (MAX_ITEMS, MAX_FORM_ATOMS) before it reaches the runner."""
    if len(nodes) > MAX_FORM_ATOMS:
        raise ValueError(f"{where}: this form holds {len(nodes):,} atoms, at most {MAX_FORM_ATOMS:,} (hyperon's stack "
                         "overflows on one of about 37,000 and the agent dies); split it into smaller definitions")
    widest = max((len(n.items) for n in nodes if isinstance(n, Expr)), default=0)
    if widest > MAX_ITEMS:
        raise ValueError(f"{where}: an expression here holds {widest:,} items, at most {MAX_ITEMS:,} (hyperon kills "
                         "the agent on one of 1,023); split the list")


def _error_line(text: str, message: str) -> int:
    import re

    match = re.search(r"character (\d+)", message)
    return _line_of(text, int(match.group(1)) - 1) if match else 1


def user_skill_files(folder: Path) -> tuple[list[Path], str | None]:
    """The `.metta` files of the user's skill folder (`skillsDir`), and a line for the user when it is
    no folder to read: a typo or a file named there loaded no skill and said nothing."""
    shown = f"skillsDir {str(folder)!r}"
    try:  # is_dir raised for a name past the system's limit: the agent did not start, a traceback
        if not folder.is_dir():
            what = "is not a folder" if folder.exists() else "does not exist"
            return [], f"{shown} {what}; no user skills loaded"
        next(folder.iterdir(), None)  # glob passes over a folder it may not list, as if it were empty
    except OSError as err:
        return [], f"{shown} cannot be read ({err.strerror or err}); no user skills loaded"
    return sorted(folder.glob("*.metta")), None


def load_skill_files(runner: Any, paths: list[Path | tuple[str, str]], known: dict[str, SkillSpec],
                     trusted: bool = False, protected: Container[str] = frozenset()) -> LoadReport:
    """Load files in order into the runner (a file, or a (name, text) pair: the registry's skills); each
    bad one is skipped with its error reported.

    Only `trusted` files (the agent's own) may run code at load time with `!` or define `protected`
    functions (those of the agent's own files: `LoadReport.functions` of loading them).
    """
    report = LoadReport()
    for path in paths:
        try:
            if isinstance(path, tuple):
                text = path[1]
                declared, functions = check_skill_text(text, path[0], {**known, **report.skills}, trusted, protected)
            else:
                declared, text, functions = check_skill_file(path, {**known, **report.skills}, trusted, protected)
            runner.parse_all(text)  # hyperon's own tokenizer must accept it too
        except ValueError as err:
            report.errors.append(str(err))
            continue
        except RuntimeError as err:  # hyperon's parser
            report.errors.append(f"{path}: hyperon cannot parse it: {err}")
            continue
        runner.run(text)
        report.skills.update(declared)
        report.functions |= functions
    return report
