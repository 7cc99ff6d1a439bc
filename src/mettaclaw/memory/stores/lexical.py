"""BM25 over long-term memory, in process beside the vector store (filters.py holds the other
in-process index, for filters).

BM25 (bm25s) without full rebuilds:
Why not rebuild per write: indexing 100k texts takes seconds, and `remember` must stay near 10 ms.
So the index is a built bm25s index (the "main" part) plus a small delta of texts added since,
scored with the same BM25 formula at query time, plus tombstones for removed or replaced texts.
The main part is rebuilt lazily, at the next search, once the delta or the tombstones outgrow a
share of it: the cost of a rebuild is spread over thousands of writes. A big index (`background_from`
documents) rebuilds in a thread: a rebuild at 100k takes seconds, which a person should not wait
for inside one `query` (docs/decisions/0005). Meanwhile searches go on over the old built part and the
delta, and what is written during the build is replayed over the new part when it is put in place.

Why a hit must match an informative term: a term in more than half the documents is no evidence
that a document is the one asked for (Robertson and Sparck Jones' idf of such a term is below zero;
bm25s' lucene form keeps it just above, and it then favours the shortest documents). In a chat
memory every turn carries its speaker's name, so "which cities has Jon visited?" ranked "Jon:
Agreed!" over the turn about Rome. So when a query has terms in at most half the documents, only
documents with one of them are ranked (docs/decisions/0006). A memory of a few documents
(`COMMON_MIN_DOCS`) has no common terms. (SQLite FTS5, which the semantic store searches with, floors
such a term's idf at 1e-6: there they rank last rather than not at all.)

A speaker's name is such a term however many documents hold it: with four people in one memory
"jon" is in a quarter of them, not half. So the names of
everyone the memory has heard (`search(names=...)`) are common too: they still count in the score,
but a name alone makes no hit.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from mettaclaw.memory.core.text import query_terms, terms

# A term is common (no evidence alone) only in at least this many documents: in a handful of
# memories, "in most of them" is chance, and a user's first few memories must all be findable by words.
COMMON_MIN_DOCS = 10


@functools.lru_cache(maxsize=1 << 14)  # the passages of the same long rows are scored query after query
def _term_counts(text: str) -> tuple[int, Counter[str]]:
    toks = terms(text)
    return len(toks), Counter(toks)


@dataclass
class _Built:
    """A built bm25s part and its statistics (`fetched`: terms asked of `tokens_of` for it)."""

    retriever: Any
    df: Counter[str]
    length: float
    fetched: dict[str, list[str]]


class _Build:
    """One rebuild: the corpus it was taken from and the ids written since (replayed when installed)."""

    def __init__(self, ids: list[str], tokens: dict[str, list[str]], missing: list[str]) -> None:
        self.ids, self.tokens, self.missing = ids, tokens, missing
        self.touched: set[str] = set()
        self.done = threading.Event()
        self.result: _Built | None = None
        self.error: BaseException | None = None


class BM25Index:
    """Incremental BM25 keyed by memory id: `add` replaces, `remove` tombstones, `search` ranks.

    `save` and `restore` keep it across restarts (a 100k-row index builds in seconds, restores in a
    fraction of one). A restored index does not hold the terms of its built part; `tokens_of`, given
    by the owner of the texts, supplies them when a rebuild needs them.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75, rebuild_share: float = 0.1, min_rebuild: int = 256,
                 tokens_of: Callable[[list[str]], dict[str, list[str]]] | None = None,
                 background_from: int = 20_000) -> None:
        self.k1, self.b = k1, b
        self.rebuild_share, self.min_rebuild = rebuild_share, min_rebuild
        self.background_from = background_from  # documents from which a lazy rebuild runs in a thread
        self._build: _Build | None = None  # the rebuild running in a thread, if any
        self.tokens_of = tokens_of
        self._tokens: dict[str, list[str]] = {}  # live documents' terms, where known
        self._main_ids: list[str] = []
        self._main_pos: dict[str, int] = {}
        self._main_alive = np.zeros(0, dtype=bool)
        self._main_df: Counter[str] = Counter()
        self._main_len = 0.0  # total tokens in the main part when built
        self._retriever = None
        self._delta: dict[str, list[str]] = {}
        self._delta_df: Counter[str] = Counter()
        self._delta_post: dict[str, dict[str, int]] = {}  # term -> {id: tf}: scoring touches only matches
        self._delta_len = 0
        self._dead = 0
        self.rebuilds = 0

    def __len__(self) -> int:
        return len(self._delta) + int(np.count_nonzero(self._main_alive))

    def __contains__(self, doc_id: str) -> bool:
        if doc_id in self._delta:
            return True
        pos = self._main_pos.get(doc_id)
        return pos is not None and bool(self._main_alive[pos])

    def add(self, doc_id: str, text: str) -> None:
        self.remove(doc_id)
        self._add_delta(doc_id, terms(text))

    def _add_delta(self, doc_id: str, toks: list[str]) -> None:
        if self._build is not None:
            self._build.touched.add(doc_id)
        self._tokens[doc_id] = toks
        self._delta[doc_id] = toks
        self._delta_len += len(toks)
        for term, tf in Counter(toks).items():
            self._delta_df[term] += 1
            self._delta_post.setdefault(term, {})[doc_id] = tf

    def add_many(self, items: Iterable[tuple[str, str]]) -> None:
        for doc_id, text in items:
            self.add(doc_id, text)

    def load(self, items: Iterable[tuple[str, str]]) -> None:
        """Replace the whole index with these (id, text) pairs and build it: the fast path at open."""
        self.wait()
        self._tokens = {doc_id: terms(text) for doc_id, text in items}
        self._main_ids, self._main_pos, self._main_alive = [], {}, np.zeros(0, dtype=bool)
        self._delta = dict(self._tokens)
        self.rebuild()

    def remove(self, doc_id: str) -> bool:
        if doc_id not in self:
            return False
        if self._build is not None:
            self._build.touched.add(doc_id)
        self._tokens.pop(doc_id, None)
        if doc_id in self._delta:
            toks = self._delta.pop(doc_id)
            self._delta_len -= len(toks)
            for term in set(toks):
                self._delta_df[term] -= 1
                self._delta_post[term].pop(doc_id, None)
        else:
            self._main_alive[self._main_pos[doc_id]] = False
            self._dead += 1
        return True

    # --- building
    def _needs_rebuild(self) -> bool:
        limit = max(self.min_rebuild, int(self.rebuild_share * len(self._main_ids)))
        return len(self._delta) > limit or self._dead > limit

    def rebuild(self) -> None:
        """Fold delta and tombstones into a fresh bm25s index now (a running background build is
        finished first)."""
        self.wait()
        build = self._taken()
        self._install(build, self._built(build))

    def _maybe_rebuild(self) -> None:
        """What a search does first: put a finished background build in place, then start a rebuild
        when one is due (inline below `background_from` documents, where it takes milliseconds)."""
        if self._build is not None and self._build.done.is_set():
            self.wait()
        if self._build is not None or not self._needs_rebuild():
            return
        if len(self) < self.background_from:
            self.rebuild()
            return
        build = self._build = self._taken()

        def run() -> None:
            try:
                build.result = self._built(build)
            except BaseException as exc:  # noqa: BLE001 - handed to the thread that waits
                build.error = exc
            finally:
                build.done.set()

        threading.Thread(target=run, name="bm25-rebuild", daemon=True).start()

    def wait(self) -> None:
        """Finish a background rebuild and put it in place (its error, if it failed, is raised here)."""
        build = self._build
        if build is None:
            return
        build.done.wait()
        self._build = None
        if build.error is not None:
            raise RuntimeError(f"the BM25 rebuild failed: {build.error}") from build.error
        if build.result is not None:
            self._install(build, build.result)

    def _taken(self) -> _Build:
        """A rebuild of the live documents now: their ids, the terms known for them, the ids whose
        terms must be asked of `tokens_of` (a restored index does not hold its built part's)."""
        ids = [i for i, alive in zip(self._main_ids, self._main_alive, strict=True) if alive and i not in self._delta]
        ids += list(self._delta)
        known = {i: self._tokens[i] for i in ids if i in self._tokens}
        missing = [i for i in ids if i not in known]
        if missing and self.tokens_of is None:
            raise RuntimeError("a restored BM25 index needs tokens_of to rebuild")
        return _Build(ids, known, missing)

    def _built(self, build: _Build) -> _Built:
        """A bm25s index of the build's documents: reads nothing of `self` that a write changes, so it
        can run in a thread (`tokens_of` must tolerate ids removed meanwhile)."""
        import bm25s

        fetched = self.tokens_of(build.missing) if build.missing and self.tokens_of is not None else {}
        corpus = [build.tokens.get(i) or fetched.get(i) or ["\x00empty"] for i in build.ids]
        retriever = None
        if build.ids:
            retriever = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
            retriever.index(corpus, show_progress=False)
        return _Built(retriever, Counter(t for toks in corpus for t in set(toks)),
                      float(sum(len(toks) for toks in corpus)), fetched)

    def _install(self, build: _Build, built: _Built) -> None:
        """Put a built part in place; what was written since its corpus was taken (`build.touched`)
        stays in the delta, and the built part's copies of those documents are tombstones."""
        touched = build.touched
        self._tokens.update({i: t for i, t in built.fetched.items() if i not in touched})
        self._main_ids = build.ids
        self._main_pos = {doc_id: pos for pos, doc_id in enumerate(build.ids)}
        self._main_alive = np.ones(len(build.ids), dtype=bool)
        for doc_id in touched:
            pos = self._main_pos.get(doc_id)
            if pos is not None:
                self._main_alive[pos] = False
        self._dead = len(build.ids) - int(np.count_nonzero(self._main_alive))
        self._main_df, self._main_len, self._retriever = built.df, built.length, built.retriever
        later = {i: toks for i, toks in self._delta.items() if i in touched}
        self._delta, self._delta_df, self._delta_post, self._delta_len = {}, Counter(), {}, 0
        for doc_id, toks in later.items():
            self._add_delta(doc_id, toks)
        self.rebuilds += 1

    # --- keeping it across restarts
    def save(self, folder: Path) -> None:
        """Write the index into `folder` (which must be empty or new): bm25s' own arrays for the built
        part, JSON for the rest (the delta's terms, tombstones, statistics). A delta big enough to be
        folded at the next search is folded now: once at close, not at every start that follows."""
        self.wait()
        if self._needs_rebuild():
            self.rebuild()
        folder.mkdir(parents=True, exist_ok=True)
        if self._retriever is not None:
            self._retriever.save(str(folder / "bm25s"), show_progress=False)
        np.save(folder / "alive.npy", self._main_alive, allow_pickle=False)
        state = {"ids": self._main_ids, "df": self._main_df, "len": self._main_len, "delta": self._delta,
                 "dead": self._dead, "k1": self.k1, "b": self.b}
        (folder / "state.json").write_bytes(orjson.dumps(state))

    @classmethod
    def restore(cls, folder: Path, tokens_of: Callable[[list[str]], dict[str, list[str]]],
                **options: Any) -> BM25Index:
        """An index as `save` wrote it; a missing or malformed file raises (the caller rebuilds)."""
        import bm25s

        state = orjson.loads((folder / "state.json").read_bytes())
        index = cls(k1=state["k1"], b=state["b"], tokens_of=tokens_of, **options)
        index._main_ids = list(state["ids"])
        index._main_pos = {doc_id: pos for pos, doc_id in enumerate(index._main_ids)}
        index._main_alive = np.load(folder / "alive.npy", allow_pickle=False)
        if len(index._main_alive) != len(index._main_ids):
            raise ValueError("BM25 snapshot: ids and tombstones differ in length")
        index._main_df, index._main_len, index._dead = Counter(state["df"]), float(state["len"]), int(state["dead"])
        if index._main_ids:
            index._retriever = bm25s.BM25.load(str(folder / "bm25s"), show_progress=False)
        for doc_id, toks in state["delta"].items():
            index._add_delta(doc_id, list(toks))
        return index

    # --- scoring
    def _idf(self, term: str) -> float:
        """A term's idf over both parts, bm25s' lucene form (0 for a term no document holds)."""
        df = self._main_df.get(term, 0) + self._delta_df.get(term, 0)
        return math.log(1 + (len(self) - df + 0.5) / (df + 0.5)) if df else 0.0

    def _length_norm(self, length: int, avgdl: float) -> float:
        return self.k1 * (1 - self.b + self.b * length / max(avgdl, 1e-9))

    def _avgdl(self) -> float:
        return (self._main_len + self._delta_len) / max(1, len(self._main_ids) + len(self._delta))

    def _delta_scores(self, asked: list[str], allowed: set[str] | None) -> dict[str, float]:
        """BM25 (lucene variant, as bm25s) for delta documents, with corpus statistics of both parts."""
        avgdl = self._avgdl()
        out: dict[str, float] = {}
        for term in asked:
            postings = self._delta_post.get(term)
            if not postings:
                continue
            idf = self._idf(term)
            for doc_id, tf in postings.items():
                if allowed is not None and doc_id not in allowed:
                    continue
                norm = self._length_norm(len(self._delta[doc_id]), avgdl)
                out[doc_id] = out.get(doc_id, 0.0) + idf * tf / (tf + norm)  # bm25s' lucene form
        return out

    def score_texts(self, query: str, texts: list[str]) -> list[float]:
        """Each text's BM25 score for `query` (lucene form, as `search` scores) as if it were one more
        document of this index, with the index's document frequencies and average length: how a
        part of a long document (a passage) would rank among the rest."""
        asked = list(query_terms(query))
        if not asked or not texts:
            return [0.0] * len(texts)
        avgdl = self._avgdl()
        idf = {t: self._idf(t) for t in set(asked)}
        out = []
        for text in texts:
            length, counts = _term_counts(text)
            norm = self._length_norm(length, avgdl)
            out.append(sum(idf[t] * counts[t] / (counts[t] + norm) for t in asked if t in counts))
        return out

    def search(self, query: str, k: int, allowed: set[str] | None = None,
               names: frozenset[str] = frozenset()) -> list[tuple[str, float]]:
        """Top k (id, score) with score > 0; `allowed` restricts to a candidate id set; `names` are
        terms of the people the memory has heard, common wherever they occur (see the module)."""
        self._maybe_rebuild()
        asked = list(query_terms(query))
        if not asked or k <= 0:
            return []
        informative = self._informative(asked, names)
        hits: list[tuple[str, float]] = []
        if self._retriever is not None:
            vocab = self._retriever.vocab_dict
            known = [t for t in asked if t in vocab]
            if known:
                scores = self._retriever.get_scores(known)
                mask = self._main_alive
                if allowed is not None:
                    mask = np.zeros(len(self._main_ids), dtype=bool)
                    pos = [self._main_pos[i] for i in allowed if i in self._main_pos]
                    mask[pos] = True
                    mask &= self._main_alive
                if informative is not None:
                    telling = [t for t in informative if t in vocab]
                    mask = mask & (self._retriever.get_scores(telling) > 0) if telling else np.zeros_like(mask)
                scores = np.where(mask, scores, 0.0)
                top = min(k, int(np.count_nonzero(scores > 0)))
                if top:
                    idx = np.argpartition(-scores, top - 1)[:top]
                    hits = [(self._main_ids[i], float(scores[i])) for i in idx]
        delta = self._delta_scores(asked, allowed)
        if informative is not None:
            telling_docs = set().union(*(self._delta_post.get(t, {}) for t in informative))
            delta = {i: score for i, score in delta.items() if i in telling_docs}
        hits.extend(delta.items())
        hits.sort(key=lambda h: -h[1])
        return hits[:k]

    def _informative(self, asked: list[str], names: frozenset[str] = frozenset()) -> set[str] | None:
        """The query's terms that are not common (common: in more than half the documents and in at
        least COMMON_MIN_DOCS, or a name in `names`), when it has both kinds (None: all of its terms
        rank alike)."""
        counted = len(self._main_ids) + len(self._delta)  # the documents df counts (tombstones too)
        common = {t for t in asked if t in names
                  or (df := self._main_df.get(t, 0) + self._delta_df.get(t, 0)) >= COMMON_MIN_DOCS and 2 * df > counted}
        informative = set(asked) - common
        return informative if common and informative else None
