"""What the recall benchmarks share: reading the `query` skill's listing, scoring it at k and within a
token budget, the injected clock, the bootstrap interval of a mean, the summary by question group and
its printed lines, and the comparison with an earlier run."""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from _common import median, percentile

from mettaclaw.memory.core.settings import RecallSettings
from mettaclaw.memory.core.text import sentences, term_set

KS = (5, 10, 20)
TOKEN_BUDGET = 500
MODES = ("agent", "bm25", "vector")  # the live agent's `query`, and plain rankings over the same episode rows
_TOKEN = re.compile(r"\w+|[^\w\s]")
_HIT_HEAD = re.compile(r"^\d+\. \[\w+\](?: \([^)\n]*\))? ", re.M)  # recall.render: "3. [semantic] (time) "
_HIT_TAIL = re.compile(r" \(id ([^,)\s]+)(?:, from [^)]*)?\)$")  # ... " (id ID, from EPISODES)"


def add_settings_option(parser: argparse.ArgumentParser) -> None:
    """`--set NAME=VALUE`, the recall benchmarks' one way to change a recall setting."""
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="change a recall setting (tuning runs only; the default is what the agent uses); "
                             "stages=-NAME leaves a recall stage out")


def recall_settings(parser: argparse.ArgumentParser, pairs: list[str]) -> tuple[RecallSettings, dict[str, str]]:
    """The settings `--set` asks for and the overrides as given (for a run's label); a pair without
    "=" or a setting RecallSettings refuses is the parser's error, naming it and why."""
    if bad := [kv for kv in pairs if "=" not in kv]:
        parser.error(f"--set {bad[0]!r}: a setting is NAME=VALUE")
    overrides = dict(kv.split("=", 1) for kv in pairs)
    try:
        return RecallSettings(**overrides), overrides
    except ValueError as exc:  # pydantic's ValidationError: the setting and why it was refused
        parser.error(f"--set: {exc}")


def count_tokens(text: str) -> int:
    """Words and punctuation marks: a tokenizer-free stand-in for what the model pays."""
    return len(_TOKEN.findall(text))


def shown_hits(shown: str) -> list[tuple[str, str]]:
    """(id, text as the model reads it) of each hit the `query` skill listed, best first: a dream record
    shows only what the hits above it do not (recall), so what it costs and which turns it shows are
    read from the listing, not from the stored record."""
    heads = list(_HIT_HEAD.finditer(shown))
    out = []
    for n, head in enumerate(heads):
        block = shown[head.end() : heads[n + 1].start() if n + 1 < len(heads) else len(shown)].rstrip("\n")
        tail = _HIT_TAIL.search(block)
        if tail is None:
            raise ValueError(f"hit {n + 1} of the query's listing does not end with its id: {block[-200:]!r}")
        out.append((tail[1], block[: tail.start()]))
    return out


class SessionClock:
    """The agent's clock, set to each turn's session time by the benchmark."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def shows(text: str, turn: str) -> bool:
    """The hit's text really shows this turn: some sentence of the turn (two content words or more, any
    of its sentences however long the turn) has 80% of its content words in the text. A turn always
    shows itself."""
    if text == turn:
        return True
    have = term_set(text)
    for sent in sentences(turn, limit=sys.maxsize):
        want = term_set(sent)
        if len(want) >= 2 and len(want & have) >= 0.8 * len(want):
            return True
    return False


def scored(ranked: list[tuple[str, list[str]]], evidence: set[str], ks: tuple[int, ...] = KS) -> dict[str, float]:
    """Recall at each k and within the token budget, from (shown text, turns it stands for) in order."""
    out = {}
    for k in ks:
        covered = set().union(*(turns for _, turns in ranked[:k])) if ranked else set()
        out[f"R@{k}"] = len(evidence & covered) / len(evidence)
    covered, used = set(), 0
    for text, turns in ranked:
        used += count_tokens(text)
        if used > TOKEN_BUDGET:
            break
        covered |= set(turns)
    out[f"R@{TOKEN_BUDGET}tok"] = len(evidence & covered) / len(evidence)
    out["tokens@10"] = sum(count_tokens(text) for text, _ in ranked[:10])
    return out


def bootstrap_ci(values: list[float], rounds: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A 95% percentile-bootstrap interval of the mean of `values` (seeded: the same run prints the same)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return float("nan"), float("nan")
    means = v[np.random.default_rng(seed).integers(0, v.size, (rounds, v.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def questions_of(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every question of every run, each with its run's source."""
    return [{**q, "source": run["source"]} for run in runs for q in run["questions"]]


def question_key(q: dict[str, Any]) -> tuple[str, str]:
    """What matches a question across runs: its run's source and its text."""
    return q["source"], q["question"]


def recall_summary(questions: list[dict[str, Any]], group_of: Callable[[dict[str, Any]], str]) -> dict[str, Any]:
    """Per ranking (MODES): each figure's mean per group and over all (with R@10's interval and the
    number of questions), and the query latency percentiles; then the agent's p95 over plain vector's."""
    out: dict[str, Any] = {}
    for mode in MODES:
        by_group: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for q in questions:
            for group in (group_of(q), "all"):
                for figure, value in q[mode].items():
                    by_group[group][figure].append(value)
        out[mode] = {group: {"n": len(figs["R@10"]), **{f: sum(v) / len(v) for f, v in figs.items()},
                             "R@10_ci95": bootstrap_ci(figs["R@10"])} for group, figs in by_group.items()}
        ms = [q[f"{mode}_ms"] for q in questions]
        out[mode]["query_p50_ms"], out[mode]["query_p95_ms"] = median(ms), percentile(ms, 95)
    out["agent_p95_over_vector_p95"] = out["agent"]["query_p95_ms"] / out["vector"]["query_p95_ms"]
    return out


def print_recall(summary: dict[str, Any], label: str, groups: Iterable[str]) -> None:
    """`NAME GROUP R@5=… R@10=… R@20=… R@500tok=… ci95=…` per group present (`tokens@10` on the `all`
    line), then `NAME query p50=… p95=…`, for each ranking; the agent's lines are named `label`."""
    for mode, name in (("agent", label), ("bm25", "bm25"), ("vector", "vector")):
        res = summary[mode]
        for group in [*groups, "all"]:
            if group not in res:
                continue
            r = res[group]
            line = f"{name} {group} " + " ".join(f"R@{k}={r[f'R@{k}']:.3f}" for k in KS)
            line += f" R@{TOKEN_BUDGET}tok={r[f'R@{TOKEN_BUDGET}tok']:.3f}"
            line += " ci95={:.3f}-{:.3f}".format(*r["R@10_ci95"])
            line += f" tokens@10={r['tokens@10']:.0f}" if group == "all" else f" (n={r['n']})"
            print(line)
        print(f"{name} query p50={res['query_p50_ms']:.1f} ms p95={res['query_p95_ms']:.1f} ms")


def paired(current: list[dict[str, Any]], earlier: list[dict[str, Any]],
           group_of: Callable[[dict[str, Any]], str]) -> dict[str, tuple[int, float, float, float]]:
    """Per group: (questions in both runs, mean R@10 change, its 95% interval) of this run over an
    earlier one, matched by `question_key`."""
    before = {question_key(q): q["agent"]["R@10"] for q in earlier}
    diffs: dict[str, list[float]] = defaultdict(list)
    for q in current:
        key = question_key(q)
        if key in before:
            for group in (group_of(q), "all"):
                diffs[group].append(q["agent"]["R@10"] - before[key])
    return {group: (len(d), sum(d) / len(d), *bootstrap_ci(d)) for group, d in diffs.items()}


def changed_evidence(current: list[dict[str, Any]], earlier: list[dict[str, Any]]) -> tuple[int, list[str]]:
    """(questions in both runs, those whose shown turns differ, in order): the turns each shown hit
    stands for, rank by rank, compared exactly. A refactoring that changes no behaviour changes none."""
    before = {question_key(q): [turns for _, turns in q.get("shown", ())] for q in earlier}
    both = [q for q in current if question_key(q) in before]
    return len(both), [f"{q['source']}: {q['question']}" for q in both
                       if [turns for _, turns in q.get("shown", ())] != before[question_key(q)]]
