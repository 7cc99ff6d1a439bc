"""Forward chaining over recalled beliefs, with proof trails (the caller decides what to keep).

Premises go into a fresh belief space (a dict per call: nothing leaks between calls).  Each round
pairs the new beliefs with every active belief, applies `|-` (or `|~` for PLN statements) through the
compiled rules, and keeps conclusions in the space.  A conclusion about a statement already present
is revised with it when their evidence (memory ids) is disjoint and the statement has no variables,
otherwise the more confident one stays; premises whose evidence overlaps are not combined, as in NARS,
so no belief is counted twice.  A statement with variables is a pattern, not evidence about one
statement, so it is never revised (the rules' revision takes no variables either).
Pairs that share no symbol are skipped: every two-premise rule needs a shared variable, which the
engine checks when it compiles the rules.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from .atoms import PLN_STATEMENT_HEADS, Belief
from .fast import Conclusion, Engine, engine
from .terms import Term, format_number, is_var

MAX_PREMISES = 200
# Wall-clock budget of one chain(). The pair budget alone does not bound the time: premises with
# variables pair with every belief through the general unifier, milliseconds a pair for large terms,
# and the agent's turn (and the memory lock) waits for the chain (docs/decisions/0016).
MAX_SECONDS = 5.0


@dataclass
class Node:
    """A belief in the space with how it got there."""

    belief: Belief
    index: int
    rule: str | None = None  # None: a premise
    parents: tuple[int, ...] = ()
    source: str | None = None  # memory id of a premise
    evidence: frozenset[str] = frozenset()
    depth: int = 0
    expectation: float = -1.0
    symbols: frozenset[str] = frozenset()

    @property
    def is_premise(self) -> bool:
        return self.rule is None


@dataclass
class InferResult:
    """Premises, every node, ranked conclusions and counters of the work done."""

    nodes: list[Node]
    conclusions: list[Node]
    pairs_tried: int = 0
    rounds: int = 0
    truncated: bool = False
    notes: list[str] = field(default_factory=list)

    def trail(self, node: Node) -> list[dict]:
        """Derivation steps leading to node, premises first: rule, conclusion, premises with memory ids."""
        steps: list[dict] = []
        seen: set[int] = set()

        def visit(n: Node) -> None:
            if n.index in seen or n.is_premise:
                return
            seen.add(n.index)
            parents = [self.nodes[i] for i in n.parents]
            for p in parents:
                visit(p)
            steps.append({
                "rule": n.rule,
                "conclusion": n.belief.text(),
                "premises": [{"belief": p.belief.text(), "memory_id": p.source, "derived": not p.is_premise}
                             for p in parents],
            })

        visit(node)
        return steps

    def render(self, limit: int = 10, kept: dict[int, str] | None = None) -> str:
        """Text for the model: conclusions by expectation, each with its proof trail and, for those
        kept as facts (`kept`: node index -> record id), the record."""
        kept = kept or {}
        if not self.conclusions:
            return "No conclusions: no rule applies to these beliefs."
        lines = [f"{len(self.conclusions)} conclusions from {sum(n.is_premise for n in self.nodes)} premises "
                 f"({self.rounds} rounds, {self.pairs_tried} pairs{', budget reached' if self.truncated else ''}); "
                 f"{f'{len(kept)} kept as facts' if kept else 'nothing was stored'}. Top by expectation:"]
        for k, n in enumerate(self.conclusions[:limit], 1):
            note = f"  [kept as fact {kept[n.index]}]" if n.index in kept else ""
            lines.append(f"{k}. {n.belief.text()}  expectation {format_number(n.expectation)}{note}")
            for step in self.trail(n):
                prem = "; ".join(p["belief"] + _origin(p) for p in step["premises"])
                lines.append(f"   {step['rule']}: {step['conclusion']} <- {prem}")
        return "\n".join(lines + self.notes)


def _origin(p: dict) -> str:
    if p["derived"]:
        return " [derived]"
    return f" [memory {p['memory_id']}]" if p["memory_id"] else " [given]"


def logic_of(b: Belief) -> str:
    """PLN for PLN link types, NAL otherwise."""
    t = b.term
    return "pln" if t.__class__ is tuple and t and t[0] in PLN_STATEMENT_HEADS else "nal"


def _symbols(t: Term, out: set[str]) -> set[str]:
    if t.__class__ is tuple:
        for x in t[1:]:
            _symbols(x, out)
    elif not is_var(t):
        out.add(t)  # type: ignore[arg-type]
    return out


class _Space:
    def __init__(self, engines: dict[str, Engine]) -> None:
        self.engines = engines
        self.nodes: list[Node] = []
        self.active: dict[Term, int] = {}  # statement -> node index of the current belief
        self.by_symbol: dict[str, set[int]] = defaultdict(set)
        self.with_vars: set[int] = set()

    def add(self, node: Node) -> Node | None:
        """Put a node in the space, revising or replacing a belief about the same statement."""
        node.index = len(self.nodes)
        if node.expectation < 0:
            node.expectation = self.engines["nal"].expectation(node.belief.f, node.belief.c)
        old_i = self.active.get(node.belief.term)
        if old_i is not None:
            old = self.nodes[old_i]
            if old.evidence.isdisjoint(node.evidence) and not node.belief.has_vars:
                revised = self.engines[logic_of(old.belief)].revise(old.belief, node.belief)
                if revised is None:
                    return None
                self.nodes.append(node)
                merged = Node(revised, 0, "revision", (old_i, node.index), None, old.evidence | node.evidence,
                              max(old.depth, node.depth))
                return self._activate(merged, old_i)
            if node.belief.c <= old.belief.c:
                return None
            self.nodes.append(node)
            self._deactivate(old_i)
            return self._activate(node, None, appended=True)
        self.nodes.append(node)
        return self._activate(node, None, appended=True)

    def _activate(self, node: Node, replaces: int | None, appended: bool = False) -> Node:
        if not appended:
            node.index = len(self.nodes)
            node.expectation = self.engines["nal"].expectation(node.belief.f, node.belief.c)
            self.nodes.append(node)
        if replaces is not None:
            self._deactivate(replaces)
        self.active[node.belief.term] = node.index
        node.symbols = frozenset(_symbols(node.belief.term, set()))
        for s in node.symbols:
            self.by_symbol[s].add(node.index)
        if node.belief.has_vars:
            self.with_vars.add(node.index)
        return node

    def _deactivate(self, i: int) -> None:
        n = self.nodes[i]
        if self.active.get(n.belief.term) == i:
            del self.active[n.belief.term]
        for s in n.symbols:
            self.by_symbol[s].discard(i)
        self.with_vars.discard(i)

    def partners(self, node: Node) -> set[int]:
        out = set(self.with_vars)
        if node.belief.has_vars or not all(e.premises_share_symbols for e in self.engines.values()):
            return set(self.active.values())
        for s in node.symbols:
            out |= self.by_symbol.get(s, set())
        return out


def chain(premises: Sequence[tuple[Belief, str | None]], depth: int = 3, max_pairs: int = 30000,
          max_new_per_round: int = 80, max_keep_per_round: int = 5000,
          single_premise: bool = True, max_seconds: float | None = None,
          clock: Callable[[], float] = time.monotonic) -> InferResult:
    """Forward-chain from (belief, memory id) premises for up to `depth` rounds within `max_pairs`
    and `max_seconds` (default MAX_SECONDS, read on `clock`), whichever is reached first.

    Each round keeps its `max_keep_per_round` best conclusions (by expectation) and pairs the best
    `max_new_per_round` of them with everything in the space in the next round."""
    if len(premises) > MAX_PREMISES:
        raise ValueError(f"too many premises: {len(premises)} (limit {MAX_PREMISES})")
    seconds = MAX_SECONDS if max_seconds is None else max_seconds
    deadline = clock() + seconds
    out_of_time = False
    space = _Space({"nal": engine("nal"), "pln": engine("pln")})
    expect = space.engines["nal"].functions["Truth_Expectation"]
    frontier: list[Node] = []
    for k, (b, mid) in enumerate(premises):
        ev = frozenset([mid or f"premise-{k}"])
        n = space.add(Node(b, 0, None, (), mid, ev, 0))
        if n is not None:
            frontier.append(n)
    pairs = 0
    rounds = 0
    truncated = False
    for d in range(1, depth + 1):
        if not frontier:
            break
        rounds = d
        # (expectation, conclusion, parent indices, evidence): Nodes are made only for what is kept
        produced: list[tuple[float, Conclusion, tuple[int, ...], frozenset[str]]] = []
        frontier_ids = {n.index for n in frontier}
        for n in frontier:
            if space.active.get(n.belief.term) != n.index:
                continue
            if single_premise:
                for c in space.engines[logic_of(n.belief)].derive1(n.belief):
                    produced.append((expect((c.f, c.c)), c, (n.index,), n.evidence))
            n_logic = logic_of(n.belief)
            n_ev = n.evidence
            # A node is in the frontier once, so (new, old) pairs never repeat; (new, new) pairs are
            # taken once, from the later node.
            for j in space.partners(n):
                if j >= n.index and j in frontier_ids:
                    continue
                m = space.nodes[j]
                if not n_ev.isdisjoint(m.evidence):
                    continue
                if pairs >= max_pairs or clock() > deadline:
                    truncated = True
                    out_of_time = pairs < max_pairs
                    break
                pairs += 1
                eng = space.engines["pln" if n_logic == "pln" or logic_of(m.belief) == "pln" else "nal"]
                cs = eng.derive2(n.belief, m.belief)
                if cs:
                    ev = n.evidence | m.evidence
                    for c in cs:
                        produced.append((expect((c.f, c.c)), c, (j, n.index) if c.swapped else (n.index, j), ev))
            if truncated:
                break
        produced.sort(key=lambda x: -x[0])
        frontier = []
        for e, c, parents, ev in produced[:max_keep_per_round]:
            added = space.add(Node(c.belief(), 0, c.rule, parents, None, ev, d, e))
            if added is not None and len(frontier) < max_new_per_round:
                frontier.append(added)
        if truncated:
            break
    conclusions = [space.nodes[i] for i in space.active.values() if not space.nodes[i].is_premise]
    conclusions.sort(key=lambda n: (-n.expectation, n.belief.statement))
    result = InferResult(space.nodes, conclusions, pairs, rounds, truncated)
    if out_of_time:
        result.notes.append(f"(Stopped at the time budget of {seconds:g} s, with the conclusions found so far; "
                            "beliefs with variables are slow, as they pair with every other belief.)")
    return result


def chain_beliefs(beliefs: Iterable[Belief], **kw: object) -> InferResult:
    """chain() for beliefs without memory ids (they get positional ids)."""
    return chain([(b, None) for b in beliefs], **kw)  # type: ignore[arg-type]
