"""Themes: what one participant said about one topic, gathered across a long window of history.

Why: a batch summary sees about a hundred episodes, but "what sports has John done" is answered by a
sentence in March and another in July, each buried in a turn about something else. So every dream
keeps the content sentences of recent episodes per participant (`group_by`, e.g. the speaker),
clusters each participant's sentences by meaning (Ward's clustering of their vectors, about `size`
a theme), and writes each cluster that spans two or more episodes as one `summary` record tagged
`theme`: the participant's name once, then the sentences closest to the cluster's centre, in time order,
citing exactly the episodes they were taken from.

A theme is an index over its episodes, not a claim, so it is written without reconciliation and
rebuilt when its participant says something new: a theme whose sentences come out the same is kept
as it is, the others are retired (the episodes and facts they point at are untouched).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.text import attributed, chat_prose, sentences, term_set
from mettaclaw.memory.stores.cache import embed_ahead

from .cluster import CLUSTERINGS, cluster_vectors
from .episodes import DreamEpisode
from .summarise import MAX_SENTENCE_CHARS

THEME_TAG = "theme"
GROUP_KEY = "theme_group"


@dataclass(frozen=True)
class ThemePolicy:
    # chosen on LoCoMo conversations 0-1 through the live agent (docs/decisions/0008)
    size: int = 8  # sentences a theme, on average (k = sentences // size)
    max_sentences: int = 10  # the most central sentences a theme shows
    window: int = 3000  # the most recent content sentences kept per participant
    total: int = 20_000  # all participants together (a channel of many speakers): the least recent go first
    # Ward's clustering is deterministic and hierarchical: the themes a dream rebuilds after a few new
    # sentences stay much the same, where k-means moved them with one more dream (docs/decisions/0008)
    clustering: str = "ward"  # kmeans | ward (cluster.cluster_vectors)
    min_terms: int = 3  # content words (beyond names and background) that make a sentence worth keeping
    # a sentence its speaker said word for word in this many episodes is a habit of speech ("the traffic
    # was terrible this morning", "your help means a lot."), not a topic: it made themes of small talk
    # that came first for questions naming the speaker
    habit: int = 3

    def __post_init__(self) -> None:
        if self.size < 2 or self.max_sentences < 2 or self.window < 2 or self.min_terms < 1 or self.total < self.window \
                or self.habit < 2 or self.clustering not in CLUSTERINGS:
            raise ValueError(f"theme policy out of range: {self}")


DEFAULT_THEMES = ThemePolicy()


@dataclass(frozen=True)
class Theme:
    group: str
    text: str
    episodes: tuple[str, ...]
    time: float


def content_sentences(text: str, who: str, common: frozenset[str], policy: ThemePolicy) -> list[str]:
    """The sentences of what `who` said (its "who:" label dropped) that say something beyond `common`."""
    out = []
    for sent in sentences(text):
        body = sent[len(who) + 1 :].strip() if who and sent.startswith(who + ":") else sent
        if len(body) <= MAX_SENTENCE_CHARS and len(term_set(body) - common) >= policy.min_terms:
            out.append(body)
    return out


def spoken(text: str, who: str) -> list[tuple[str, str]]:
    """(speaker, what they said) in an episode of several speakers (`who` "alice, bob"): each line
    "bob: ..." is bob's, for his themes, not a theme of "alice, bob", and so is a line of his message
    after it. One speaker or none: [("", text)], the caller's group."""
    names = who.split(", ") if ", " in who else []
    if not names:
        return [("", text)]
    out, speaker = [], who
    for line in text.splitlines():  # a line of no label goes on the message before it
        speaker = next((n for n in names if line.startswith(n + ":")), speaker)
        out.append((speaker, line))
    return out


def participant_names(kept: dict[str, list[list[Any]]], batch: Sequence[DreamEpisode],
                      group_by: str | None) -> frozenset[str]:
    """The words of every participant's name, the batch's and the window's: "Thanks, Maria!" says
    nothing about a topic."""
    if not group_by:
        return frozenset()
    return frozenset().union(*(term_set(g) for g in {*kept, *(str(ep.meta.get(group_by) or "") for ep in batch)}))


def collect(kept: dict[str, list[list[Any]]], batch: Sequence[DreamEpisode], group_by: str | None,
            policy: ThemePolicy) -> set[str]:
    """Add a batch's content sentences to `kept` ({group: [[episode id, time, sentence], ...]}, the
    dream state's window); returns the groups that gained any. Idempotent: a replayed batch adds nothing."""
    changed = set()
    names = participant_names(kept, batch, group_by)
    seen = {str(row[0]) for rows in kept.values() for row in rows}
    for ep in batch:
        if ep.id in seen:
            continue  # this batch was consolidated before a crash: its sentences are in already
        group = str(ep.meta.get(group_by) or "") if group_by else ""
        # a pasted program or traceback is no theme of what someone said (text.prose)
        for who, text in spoken(chat_prose(ep.text), group if group_by == "who" else ""):
            rows = kept.setdefault(who or group, [])
            for sent in content_sentences(text, who or group, names, policy):
                rows.append([ep.id, ep.time, sent])
                changed.add(who or group)
            del rows[: max(0, len(rows) - policy.window)]
    over = sum(len(rows) for rows in kept.values()) - policy.total
    for group in sorted(kept, key=lambda g: float(kept[g][-1][1]) if kept[g] else float("-inf")):
        if over <= 0:
            break
        cut = min(over, len(kept[group]))  # the oldest sentences of whoever spoke least recently
        del kept[group][:cut]
        over -= cut
        if not kept[group]:
            del kept[group]
    return changed


def drop(kept: dict[str, list[list[Any]]], gone: Callable[[str], bool],
         groups: Sequence[str] | None = None) -> dict[str, list[list[Any]]]:
    """Take the sentences of the episodes `gone` names out of the window (of `groups`, else of every
    group); returns the rows taken, by group. Each changed group gets a new list, so a rebuild that is
    reading the old one meanwhile is not disturbed (what it builds is checked again: `ThemeWindow.rebuild`)."""
    dropped = {}
    for group in list(kept) if groups is None else [g for g in groups if g in kept]:
        rows, taken = [], []
        for row in kept[group]:
            (taken if gone(str(row[0])) else rows).append(row)
        if taken:
            dropped[group] = taken
            if rows:
                kept[group] = rows
            else:
                del kept[group]
    return dropped


def named(group: str, sentence: str) -> str:
    """A kept sentence as a theme shows it and clustering reads it: with its speaker's name."""
    return attributed([(group, sentence)])


def window_texts(group: str, rows: Sequence[Sequence[Any]]) -> list[str]:
    """What a rebuild of `group`'s themes embeds of these kept rows: each sentence with its speaker's
    name (what it is clustered on) and without (what cohesion is judged on)."""
    return [text for row in rows for text in (named(group, str(row[2])), str(row[2]))]


def background(kept: dict[str, list[list[Any]]], share: float = 0.2, floor: int = 5) -> frozenset[str]:
    """Words in more than `share` of the kept episodes (all participants): what everyone says all the
    time ("love", "great", "really") and so what no topic is about."""
    per_episode: dict[str, set[str]] = {}
    for rows in kept.values():
        for row in rows:
            per_episode.setdefault(str(row[0]), set()).update(term_set(str(row[2])))
    df = Counter(t for ts in per_episode.values() for t in ts)
    cut = max(floor, share * len(per_episode))
    return frozenset(t for t, n in df.items() if n > cut)


def cohesive_parts(found: list[int], vectors: np.ndarray, cohesion: float) -> list[list[int]]:
    """A cluster's sentences in the groups a chain of sentences about the same thing (cosine at least
    `cohesion`) links, each of two or more. Clustering puts every sentence somewhere: a small window
    (Sam's seven content sentences: a standup's time and its two changes, a gym locker and its change,
    a plumber's visit and its new day) is one cluster, and each sentence having a partner on its own topic glued all three into a theme."""
    from scipy.sparse.csgraph import connected_components  # scipy comes with scikit-learn (cluster.py)

    _, part_of = connected_components(vectors[found] @ vectors[found].T >= cohesion, directed=False)
    members = [[found[i] for i in np.flatnonzero(part_of == part)] for part in range(part_of.max() + 1)]
    return [part for part in members if len(part) >= 2]


def build(group: str, rows: list[list[Any]], embedder: Any, policy: ThemePolicy,
          common: frozenset[str] = frozenset(), cohesion: float = 0.0) -> list[Theme]:
    """The themes of one participant's kept sentences (deterministic for the same rows), from those
    that say something beyond `common`. A sentence said in several episodes is shown once and cites
    all of them; one said in `policy.habit` episodes or more is a habit of speech, left out.
    Clustering puts every sentence somewhere, so a theme is what a chain of sentences about the same
    thing (cosine at least `cohesion`) links (`cohesive_parts`): a theme never glues a wifi password
    to a passport's expiry, nor two pairs of them."""
    said: dict[str, list[list[Any]]] = {}
    for row in rows:
        if len(term_set(str(row[2])) - common - term_set(group)) < policy.min_terms:
            continue
        said.setdefault(" ".join(str(row[2]).lower().split()), []).append(row)
    distinct = [rows for rows in said.values() if len({str(r[0]) for r in rows}) < policy.habit]
    if len(distinct) < 2:
        return []
    vectors = np.asarray(embedder.embed([named(group, str(r[0][2])) for r in distinct]), dtype=np.float32)
    # cohesion is judged on what each sentence says without who said it: the name in every text makes
    # any two of one person's sentences look related (MiniLM: "Sam: Ana lives in Porto." and "Sam: Our
    # dinner is at Casa Lupo." 0.46, without the name 0.26), and a theme would glue anything they said
    said_alone = np.asarray(embedder.embed([str(r[0][2]) for r in distinct]), dtype=np.float32)
    out = []
    clusters = cluster_vectors(vectors, max(1, len(distinct) // policy.size), method=policy.clustering)
    for members in (part for found in clusters for part in cohesive_parts(found, said_alone, cohesion)):
        centre = vectors[members].mean(axis=0)
        central = sorted(sorted(members, key=lambda i: -float(vectors[i] @ centre))[: policy.max_sentences],
                         key=lambda i: min(float(r[1]) for r in distinct[i]))
        episodes = tuple(dict.fromkeys(str(r[0]) for i in central for r in distinct[i]))
        if len(episodes) < 2 or len(central) < 2:
            continue
        out.append(Theme(group, attributed([(group, str(distinct[i][0][2])) for i in central]), episodes,
                         max(float(r[1]) for i in central for r in distinct[i])))
    return out


def current_themes(semantic: Any, group: str) -> list[Any]:
    from mettaclaw.memory.semantic.store import RecordFilter

    found = semantic.records.select(RecordFilter(tags_all=(THEME_TAG,), kinds=("summary",)))
    return [r for r in found if r.properties.get(GROUP_KEY) == group]


def refresh(semantic: Any, group: str, themes: list[Theme],
            scope_of: Callable[[str], str] = lambda _episode: scopes.DEFAULT) -> tuple[list[Any], list[str]]:
    """Write the themes of one group: unchanged ones stay, confirmed as of now (they were just derived
    again from what their participant said, so they age only while that person is silent), new ones
    are written, stale ones retired; each in the scope of its episodes (`scope_of`), none over
    episodes of several scopes. Returns (LearnResults of the new ones, ids retired)."""
    old = {(r.content, tuple(r.source_episodes)): r for r in current_themes(semantic, group)}
    fresh = {(t.text, t.episodes): t for t in themes}
    embed_ahead(semantic.embedder, [t.text for key, t in fresh.items() if key not in old])
    now = semantic.clock()
    for key, rec in old.items():
        if key in fresh and rec.last_updated < now:
            rec.last_updated = now
            semantic.records.put(rec, reindex=False)
    written = []
    for key, theme in fresh.items():
        if key in old:
            continue
        owners = {scope_of(e) for e in theme.episodes}
        if len(owners) == 1:
            written.append(semantic.learn(theme.text, kind="summary", tags=["dream", THEME_TAG],
                                          source_episodes=list(theme.episodes), provenance="episodic_consolidation",
                                          valid_from=theme.time, properties={GROUP_KEY: group}, index=True,
                                          scope=owners.pop()))
    retired = [rec.id for key, rec in old.items() if key not in fresh and semantic.remove(rec.id)]
    return written, retired
