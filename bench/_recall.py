"""What the recall benchmarks share: reading the `query` skill's listing, scoring it at k and within a
token budget, the injected clock, and the bootstrap interval of a mean."""

from __future__ import annotations

import re

import numpy as np

from mettaclaw.memory.core.text import sentences, term_set

KS = (5, 10, 20)
TOKEN_BUDGET = 500
_TOKEN = re.compile(r"\w+|[^\w\s]")
_HIT_HEAD = re.compile(r"^\d+\. \[\w+\](?: \([^)\n]*\))? ", re.M)  # recall.render: "3. [semantic] (time) "
_HIT_TAIL = re.compile(r" \(id ([^,)\s]+)(?:, from [^)]*)?\)$")  # ... " (id ID, from EPISODES)"


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
    """The hit's text really shows this turn: some sentence of the turn (two content words or more) has
    80% of its content words in the text. A turn always shows itself."""
    if text == turn:
        return True
    have = term_set(text)
    for sent in sentences(turn):
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
