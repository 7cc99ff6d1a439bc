"""Compile a rule library into Python functions, once, from the atoms hyperon parsed.

Truth functions become ``def`` functions generated from their MeTTa bodies (arithmetic, ``if``,
``let``/``let*``, calls, ``(empty)``).  Each rule becomes a matcher specialised to its premise
patterns: plain comparisons and tuple indexing for ground premises, plus a truth function over a
bindings dict for the general unifier used when premises carry variables.  Nothing here is a second
copy of the rules: change the .metta file and the generated code changes with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .rulefile import Rule, RuleSet
from .terms import RVar, Term, shape


class CompileError(ValueError):
    """A rule file uses a construct the compiler does not translate."""


class NoConclusion(Exception):
    """Raised by ``(empty)`` inside a truth function: the rule yields nothing."""


def _empty() -> Any:
    raise NoConclusion


def _and(a: bool, b: bool) -> bool:  # MeTTa's `and` evaluates both arguments
    return a and b


def _or(a: bool, b: bool) -> bool:
    return a or b


_ARITH = {"+": "+", "-": "-", "*": "*", "/": "/", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "=="}
_IDENT = re.compile(r"[^0-9A-Za-z_]")


def _pyname(prefix: str, name: str) -> str:
    clean = _IDENT.sub(lambda m: f"_{ord(m.group()):x}_", name)
    return f"{prefix}{clean}"


@dataclass
class CompiledRule:
    """A rule ready to run: ``ground(s1, t1, s2, t2)`` and ``tv(bindings)`` for the unifier."""

    rule: Rule
    ground: Callable[..., Any]
    tv: Callable[[dict[str, Any]], tuple[float, float]]
    keys: tuple[Any, ...]


class _Gen:
    def __init__(self, rs: RuleSet) -> None:
        self.rs = rs
        self.lines: list[str] = []
        self.needed: set[str] = set()

    # ---- expressions
    def expr(self, e: Term, var: Callable[[RVar], str]) -> str:
        if e.__class__ is float:
            return repr(e)
        if e.__class__ is RVar:
            return var(e)  # type: ignore[arg-type]
        if e.__class__ is str:
            if e in ("True", "False"):
                return e
            raise CompileError(f"symbol {e!r} in a truth expression")
        if not e:
            raise CompileError("empty expression in a truth expression")
        head, args = e[0], e[1:]
        sub = [self.expr(a, var) for a in args] if head not in ("let", "let*", "if") else []
        if head == "stv" and len(args) == 2:
            return f"({sub[0]}, {sub[1]})"
        if head in _ARITH and len(args) == 2:
            return f"({sub[0]} {_ARITH[head]} {sub[1]})"
        if head in ("and", "or") and len(args) == 2:
            return f"_{head}({sub[0]}, {sub[1]})"
        if head == "not" and len(args) == 1:
            return f"(not {sub[0]})"
        if head == "empty" and not args:
            return "_empty()"
        if head == "if" and len(args) == 3:
            c, a, b = (self.expr(x, var) for x in args)
            return f"({a} if {c} else {b})"
        if head == "let" and len(args) == 3:
            return f"(({self._bind(args[0], var)} := {self.expr(args[1], var)}), {self.expr(args[2], var)})[1]"
        if head == "let*" and len(args) == 2 and args[0].__class__ is tuple:
            parts = [f"({self._bind(p[0], var)} := {self.expr(p[1], var)})" for p in args[0]]  # type: ignore[index]
            return f"({', '.join(parts)}, {self.expr(args[1], var)})[-1]"
        if head.__class__ is str and head in self.rs.functions:
            self.needed.add(head)
            return f"{_pyname('F_', head)}({', '.join(sub)})"
        raise CompileError(f"cannot compile {head!r} with {len(args)} arguments")

    def _bind(self, pat: Term, var: Callable[[RVar], str]) -> str:
        if pat.__class__ is not RVar:
            raise CompileError("let patterns must be variables")
        return var(pat)  # type: ignore[arg-type]

    # ---- truth-function definitions
    def function(self, name: str) -> None:
        defs = self.rs.functions[name]
        if len(defs) != 1:
            raise CompileError(f"{name}: {len(defs)} definitions; the compiler needs exactly one")
        head, body = defs[0]
        params, lines = [], []
        for i, p in enumerate(head[1:]):  # type: ignore[index]
            params.append(f"a{i}")
            if p.__class__ is RVar:
                lines.append(f"    {_local(p)} = a{i}")
            elif p.__class__ is tuple and len(p) == 3 and p[0] == "stv" and all(x.__class__ is RVar for x in p[1:]):
                lines.append(f"    {_local(p[1])}, {_local(p[2])} = a{i}")
            else:
                raise CompileError(f"{name}: unsupported parameter pattern")
        lines.append(f"    return {self.expr(body, _local)}")
        self.lines.append(f"def {_pyname('F_', name)}({', '.join(params)}):")
        self.lines.extend(lines)

    # ---- rules
    def rule(self, r: Rule, tag: str) -> None:
        bound: set[int] = set()
        lines: list[str] = []
        args = []
        for k, prem in enumerate(r.premises, 1):
            stmt, tv = _premise_parts(r, prem)
            args += [f"s{k}", f"t{k}"]
            self._match(stmt, f"s{k}", bound, lines, [0])
            lines.append(f"    {_local(tv)} = t{k}")
            bound.add(id(tv))
        c_stmt, c_tv = _conclusion_parts(r)
        if (c_stmt.__class__ is tuple and len(c_stmt) == 3 and c_stmt[0] in self.rs.copulas
                and c_stmt[1].__class__ is RVar and c_stmt[2].__class__ is RVar):
            # tautology (X copula X): refuse before computing the truth value
            lines.append(f"    if {self._build(c_stmt[1], bound)} == {self._build(c_stmt[2], bound)}: return None")
        lines.append(f"    return ({self._build(c_stmt, bound)}, {self.expr(c_tv, _local)})")
        self.lines.append(f"def G_{tag}({', '.join(args)}):")
        self.lines.extend(lines)
        self.lines.append(f"def T_{tag}(B):")
        self.lines.append(f"    return {self.expr(c_tv, lambda v: f'B[{v.name!r}]')}")

    def _match(self, p: Term, x: str, bound: set[int], lines: list[str], counter: list[int]) -> None:
        if p.__class__ is RVar:
            if id(p) in bound:
                lines.append(f"    if {x} != {_local(p)}: return None")  # type: ignore[arg-type]
            else:
                lines.append(f"    {_local(p)} = {x}")  # type: ignore[arg-type]
                bound.add(id(p))
        elif p.__class__ is str:
            lines.append(f"    if {x} != {p!r}: return None")
        elif p.__class__ is tuple:
            counter[0] += 1
            e = f"e{counter[0]}"
            lines.append(f"    {e} = {x}")
            lines.append(f"    if {e}.__class__ is not tuple or len({e}) != {len(p)}: return None")
            for i, c in enumerate(p):
                self._match(c, f"{e}[{i}]", bound, lines, counter)
        else:
            raise CompileError(f"number in a premise pattern: {p!r}")

    def _build(self, t: Term, bound: set[int]) -> str:
        if t.__class__ is RVar:
            if id(t) not in bound:
                raise CompileError(f"conclusion variable {t!r} not bound by the premises")
            return _local(t)  # type: ignore[arg-type]
        if t.__class__ is str:
            return repr(t)
        if t.__class__ is tuple:
            inner = ", ".join(self._build(c, bound) for c in t)
            return f"({inner},)" if len(t) == 1 else f"({inner})"
        raise CompileError(f"number in a conclusion statement: {t!r}")


def _local(v: RVar) -> str:
    return _pyname("v_", v.name)


def _premise_parts(r: Rule, prem: Term) -> tuple[Term, RVar]:
    if prem.__class__ is not tuple or len(prem) != 2 or prem[1].__class__ is not RVar:
        raise CompileError(f"rule {r.name}: premise must be (STATEMENT $T)")
    return prem[0], prem[1]  # type: ignore[return-value]


def _conclusion_parts(r: Rule) -> tuple[Term, Term]:
    c = r.conclusion
    if c.__class__ is not tuple or len(c) != 2:
        raise CompileError(f"rule {r.name}: conclusion must be (STATEMENT TRUTH)")
    return c[0], c[1]


def compile_ruleset(rs: RuleSet) -> tuple[list[CompiledRule], list[CompiledRule], dict[str, Callable[..., Any]], str]:
    """Generate and exec the code; returns (two-premise rules, one-premise rules, functions, source)."""
    g = _Gen(rs)
    for i, r in enumerate(rs.rules2):
        g.rule(r, f"2_{i}")
    for i, r in enumerate(rs.rules1):
        g.rule(r, f"1_{i}")
    # Every definition that translates is compiled (expectation, helpers); the ones that do not
    # (e.g. the interpreter's own plumbing) are skipped unless a rule needs them.
    pieces: dict[str, tuple[list[str], set[str]]] = {}
    failed: dict[str, str] = {}
    for name in rs.functions:
        sub = _Gen(rs)
        try:
            sub.function(name)
        except CompileError as e:
            failed[name] = str(e)
            continue
        pieces[name] = (sub.lines, sub.needed)
    changed = True
    while changed:
        changed = False
        for name in [n for n, (_, need) in pieces.items() if not need <= pieces.keys()]:
            del pieces[name]
            changed = True
    missing = g.needed - pieces.keys()
    if missing:
        why = "; ".join(f"{n}: {failed.get(n, 'calls a function that does not compile')}" for n in sorted(missing))
        raise CompileError(f"rules need functions that do not compile ({why})")
    done = set(pieces)
    for lines, _ in pieces.values():
        g.lines.extend(lines)
    source = "\n".join(g.lines) + "\n"
    ns: dict[str, Any] = {"_empty": _empty, "_and": _and, "_or": _or}
    exec(compile(source, f"<compiled {rs.path.name}>", "exec"), ns)
    funcs = {name: ns[_pyname("F_", name)] for name in done}

    def build(rules: list[Rule], n: str) -> list[CompiledRule]:
        return [CompiledRule(r, ns[f"G_{n}_{i}"], ns[f"T_{n}_{i}"],
                             tuple(shape(_premise_parts(r, p)[0]) for p in r.premises))
                for i, r in enumerate(rules)]

    return build(rs.rules2, "2"), build(rs.rules1, "1"), funcs, source
