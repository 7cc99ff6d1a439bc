"""The theme window as the dreamer keeps it (themes.py builds the themes): each batch's content
sentences collected per participant, each participant's themes rebuilt from their window when they
said something new, and what the trace erases taken out at once, vectors included.

Why erasures are its business: the window (in the dream's state file) is the dream's own copy of
what people said. Kept after a `forget`, it gave the forgotten sentence back in that person's next
theme; so an erased episode leaves it when the erasure is heard, the state is written before `forget`
returns, and a window a crash left holding one is mended at the next rebuild.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mettaclaw.memory.stores.cache import CachedEmbedder
from mettaclaw.memory.stores.keyed_vectors import KeyedVectors, text_digest

from . import themes
from .episodes import DreamEpisode
from .report import DreamReport
from .state import DreamState, save_state

PRESENT_KEPT = 50_000  # episode ids `_gone` remembers the trace holds (more than a theme window cites)


class ThemeWindow:
    """One dreamer's theme window: its rows live in `state` (saved to `state_path`), its vectors in
    `vectors` (cache.WindowVectors; None: the embedder's cache only). Every change holds `lock`, the
    memory's write lock, which whoever erases an episode holds too."""

    def __init__(self, state: DreamState, state_path: Path, lock: Any, source: Any, group_by: str | None,
                 policy: themes.ThemePolicy, embedder: Any, vectors: KeyedVectors | None = None) -> None:
        self.state, self.state_path, self.lock, self.source = state, state_path, lock, source
        self.group_by, self.policy, self.embedder = group_by, policy, embedder
        self.vectors = WindowVectors(embedder, vectors) if vectors is not None else None
        if isinstance(embedder, CachedEmbedder):
            # a rebuild embeds every kept sentence twice (with the speaker's name and without), and the
            # index then embeds the new themes' named sentences: with room for the whole window these
            # come from the cache instead of each being evicted before its next use (docs/decisions/0009)
            embedder.reserve(2 * policy.total)
        self._unsaved = False  # erased episodes left the window since the state was written
        self._present: set[str] = set()  # window episodes the trace was found to hold (`_gone`)

    def collect(self, batch: Sequence[DreamEpisode], erased: Container[str] = frozenset()) -> None:
        """Keep a batch's content sentences, but those of the `erased` episodes; their participants'
        themes are due for a rebuild. `erased` is read under the lock that erasing holds: an episode
        erased after the batch was read, while it was clustered, never enters the window."""
        with self.lock:
            kept = [ep for ep in batch if ep.id not in erased]
            changed = themes.collect(self.state.theme_sentences, kept, self.group_by, self.policy)
            self.state.theme_pending = sorted(set(self.state.theme_pending) | changed)

    def erased(self, record_id: str, record: Any) -> None:
        """An erased episode's sentences (and their vectors) leave the window; its participant's themes
        are rebuilt from what is left at the next dream. Saved by `save_erasures`, once for all the
        episodes that one deletion erases."""
        if not self.group_by:
            groups: list[str] | None = [""]
        elif self.group_by == "who" and record is not None:  # the group its sentences were kept under (episodes.from_trace)
            who = tuple(getattr(record, "who", ()))
            groups = [", ".join(who), *who] if len(who) > 1 else [", ".join(who)]  # each speaker's lines: themes.spoken
        else:
            groups = None  # every group is looked through (also for an episode erased before, whose record is gone)
        with self.lock:
            self._present.discard(record_id)
            changed = themes.drop(self.state.theme_sentences, {record_id}.__contains__, groups)
            if self.vectors is not None:
                self.vectors.forget([t for g, rows in changed.items() for t in themes.window_texts(g, rows)])
            if changed:
                self.state.theme_pending = sorted(set(self.state.theme_pending) | set(changed))
                self._unsaved = True

    def save_erasures(self) -> None:
        """Write the state if erased episodes left the window since it was last written."""
        with self.lock:
            if self._unsaved:
                save_state(self.state_path, self.state)
                self._unsaved = False

    def _gone(self, episode_id: str) -> bool:
        """Whether the trace no longer holds an episode of the window: erased while nobody listened (a
        crash between the erasure and `save_erasures`). Each is asked of the trace once a start;
        later erasures are heard by `erased`."""
        has = getattr(self.source, "has", None)
        if has is None or episode_id in self._present:
            return False
        if len(self._present) >= PRESENT_KEPT:
            self._present.clear()
        if has(episode_id):
            self._present.add(episode_id)
            return False
        return True

    def rebuild(self, semantic: Any, report: DreamReport, stopped: Callable[[], bool],
                progress: Callable[[int, int], None], written: Callable[[], None],
                scope_of: Callable[[str], str]) -> None:
        """Rebuild the themes of every participant who said something new (pending since their batch, so
        a dream cut short rebuilds them next time); `written` runs after each participant's writes."""
        pending = list(self.state.theme_pending)
        if not pending:
            return
        common = themes.background(self.state.theme_sentences)
        for n, group in enumerate(pending):
            if stopped():
                return
            progress(n, len(pending))
            kept = {str(row[0]) for row in self.state.theme_sentences.get(group, [])}
            gone = {episode for episode in kept if self._gone(episode)}  # read outside the lock: the turn goes on
            if gone:
                with self.lock:
                    themes.drop(self.state.theme_sentences, gone.__contains__, [group])
            found = themes.build(group, self.state.theme_sentences.get(group, []), self.vectors or self.embedder,
                                 self.policy, common, cohesion=semantic.thresholds.relevant)
            with self.lock:
                kept = {str(row[0]) for row in self.state.theme_sentences.get(group, [])}
                found = [t for t in found if set(t.episodes) <= kept]  # none erased while it was built
                new, retired = themes.refresh(semantic, group, found, scope_of)
                for result in new:
                    report.record(result)
                    report.themes.append(result.id)
                report.themes_retired += retired
                written()
                self.state.theme_pending.remove(group)
                save_state(self.state_path, self.state)
        if self.vectors is not None:  # the vectors of sentences that left the window go too
            with self.lock:
                window = list(self.state.theme_sentences.items())
            self.vectors.keep_only([t for g, rows in window for t in themes.window_texts(g, rows)])

    def close(self) -> None:
        if self.vectors is not None:
            self.vectors.close()


class WindowVectors:
    """The vectors of the texts every theme rebuild reads again (each participant's kept sentences, with
    and without their name), kept in a store of their own (on disk beside the dream's state), each
    under its text's digest; the dream's `keep_only` drops those of sentences that left the window.

    Why: the embedder's cache is empty after a restart, and the first rebuild would embed each
    participant's whole window again (docs/decisions/0009). Kept as float32,
    as the model gave them, so a rebuild after a restart derives the themes it would have without one.
    Vectors found here are handed to the embedder's cache too: the index embeds a new theme's named
    sentences, which are among these texts. Used by the dream's thread and, for an erasure, the turn's."""

    def __init__(self, embedder: Any, store: KeyedVectors) -> None:
        self.embedder, self.store = embedder, store
        self.name, self.dim = embedder.name, embedder.dim
        self._guard = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        wanted = list(dict.fromkeys(texts))
        with self._guard:
            found = {t: v[0] for t in wanted if (v := self.store.get(d := text_digest(t), d)) is not None}
        if found and isinstance(self.embedder, CachedEmbedder):
            self.embedder.keep(found)
        missing = [t for t in wanted if t not in found]
        if missing:
            fresh = np.asarray(self.embedder.embed(missing), dtype=np.float32)
            found.update(zip(missing, fresh, strict=True))
            with self._guard:
                for text, vector in zip(missing, fresh, strict=True):
                    self.store.put(digest := text_digest(text), digest, vector[None, :])
        return np.stack([np.asarray(found[t], dtype=np.float32) for t in texts]) if texts \
            else np.zeros((0, self.dim), dtype=np.float32)

    def forget(self, texts: list[str]) -> None:
        with self._guard:
            for text in texts:
                self.store.forget(text_digest(text))

    def keep_only(self, texts: list[str]) -> None:
        """Forget the vectors of every text but these (the window as it is now)."""
        live = {text_digest(t) for t in texts}
        with self._guard:
            for key in self.store.ids():
                if key not in live:
                    self.store.forget(key)

    def close(self) -> None:
        with self._guard:
            self.store.close()
