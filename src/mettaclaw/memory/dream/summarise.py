"""Cluster -> candidate facts, each citing exactly the episodes its text came from.

Offline (`ExtractiveSummariser`): sentences are never invented, only chosen, and only sentences that
say something: three content words or more (stop words and chat fillers are none) beyond `ignore`
(the participants' names), so "Yep, Caroline.", "Coffee time!" or "Wow, that sounds awesome!" said
twenty times is no fact; nor is a question, which asserts nothing ("Good morning everyone, how are
you doing today?" said every day was a fact citing each day); nor a reading said again with other
numbers ("It's 12 degrees outside today", "It's 14 degrees ...": small talk, not a lasting statement).
A sentence said again in other episodes of the cluster (near-identical content words, the
same numbers) becomes one *fact* citing every episode that said it; the cluster's most central
sentences that share the topic of the most central one (a word about what, not only when: "today",
"Monday" or a number is no topic) become one *summary* citing only the episodes those sentences were
taken from, so unrelated statements are never glued into one record. With a model
(`LLMSummariser`), the model writes the facts and must cite episode numbers; uncited or wrongly cited
lines are dropped, and a failed call falls back to the extractive summariser for that cluster.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mettaclaw.memory.core.text import chat_prose, sentences, term_set, terms
from mettaclaw.memory.semantic.memory import MAX_CONTENT

from .concepts import CALENDAR
from .episodes import DreamEpisode

log = logging.getLogger(__name__)

MAX_SENTENCE_CHARS = 400
# words that say when something was said or happened, not what about: "It's 12 degrees outside today"
# and "We shipped release 2.4 today" share "today" and nothing else. Holidays, birthdays and the words
# with another sense ("a bad fall", "a hot spring") can be what a sentence is about
TOPICS = frozenset({"christmas", "easter", "holiday", "holidays", "birthday", "anniversary", "fall", "spring"})
WHEN = frozenset(terms(" ".join(sorted(CALENDAR - TOPICS))
                       + " today tonight tomorrow yesterday monday tuesday wednesday thursday friday saturday sunday"))


@dataclass
class CandidateFact:
    content: str
    episodes: tuple[str, ...]
    kind: str = "fact"  # fact | summary
    tags: tuple[str, ...] = ("dream",)
    category: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def _labelled(sent: str, who: str) -> str:
    """A sentence lifted out of its episode keeps who said it. In a turn several people spoke in (`who`
    "alice, bob"), each line already names its own speaker: "alice, bob: bob: My cat likes tuna" put
    bob's words in alice's mouth too."""
    if not who or sent.startswith(who) or any(sent.startswith(name.strip() + ":") for name in who.split(",")):
        return sent
    return f"{who}: {sent}"


def _numbers(terms: frozenset[str]) -> frozenset[str]:
    return frozenset(t for t in terms if t[0].isdigit())


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _about(shared: frozenset[str]) -> bool:
    """Whether the words two sentences share name a topic: one that is neither a time word nor a number."""
    return any(t not in WHEN and not t[0].isdigit() for t in shared)


def _wording(group: list[tuple[str, str, frozenset[str]]]) -> str:
    """The wording of a recurring statement that most of its episodes said in full (each of their
    sentences has every content word of it), so the fact says nothing only one of them said. Before,
    the fact took the most specific wording: "The team meeting is on Tuesday at 10am in room 4." and
    later "... in room 4, bring the budget." made the fact "... bring the budget.", citing the turn
    that never said it, and the once-said part counted as confirmed twice. (The fact still cites every
    episode of the group: each said the statement, some in other words, and forgetting the fact takes
    them all.)"""
    def saying(ts: frozenset[str]) -> int:
        return len({e for e, _, other in group if ts <= other})

    return max(group, key=lambda item: (saying(item[2]), len(item[2]), -len(item[1])))[1]


class ExtractiveSummariser:
    """Recurring sentences -> facts; central sentences -> one summary. Deterministic, no model."""

    name = "extractive"

    def __init__(self, same: float = 0.6, summary_sentences: int = 4, min_terms: int = 3) -> None:
        self.same, self.summary_sentences, self.min_terms = same, summary_sentences, min_terms

    def summarise(self, cluster: Sequence[DreamEpisode], ignore: frozenset[str] = frozenset()) -> list[CandidateFact]:
        items: list[tuple[str, str, frozenset[str]]] = []  # (episode id, sentence, content terms)
        for ep in cluster:
            who = str(ep.meta.get("who") or "")
            for sent in sentences(chat_prose(ep.text)):  # a pasted program, log or long text makes no fact
                t = term_set(sent) - ignore
                if len(t) >= self.min_terms and len(sent) <= MAX_SENTENCE_CHARS and not sent.endswith("?"):
                    items.append((ep.id, _labelled(sent, who), t))
        items = self._lasting(items)
        if not items:
            return []
        per_episode: dict[str, set[str]] = {}
        for ep_id, _, ts in items:
            per_episode.setdefault(ep_id, set()).update(ts)
        df = Counter(t for ts in per_episode.values() for t in ts)  # in how many episodes a word occurs
        out, said_again = self._recurring(items)
        summary = self._summary(items, df, len(per_episode), said_again)
        if summary is not None:
            out.append(summary)
        return out

    def _lasting(self, items: list[tuple[str, str, frozenset[str]]]) -> list[tuple[str, str, frozenset[str]]]:
        """The sentences but the readings: those said in other episodes in near-identical words with other
        numbers ("It's 12 degrees outside today", "It's 14 degrees ..."; "I walked 8000 steps today").
        Before, two of them with the same number by chance made a fact, and one of them went into a
        summary beside whatever else was said that day."""
        groups: list[list[int]] = []
        for i, (_, _, ts) in enumerate(items):
            wording = ts - _numbers(ts)
            for group in groups:
                first = items[group[0]][2]
                if _jaccard(first - _numbers(first), wording) >= self.same:
                    group.append(i)
                    break
            else:
                groups.append([i])
        readings = {i for group in groups if len({items[i][0] for i in group}) >= 2
                    and len({_numbers(items[i][2]) for i in group}) >= 2 for i in group}
        return [item for i, item in enumerate(items) if i not in readings]

    def _recurring(self, items: list[tuple[str, str, frozenset[str]]]) -> tuple[list[CandidateFact], list[frozenset[str]]]:
        """Groups of near-identical sentences from at least two episodes (and their word sets)."""
        groups: list[list[tuple[str, str, frozenset[str]]]] = []
        for item in items:
            for group in groups:  # the same statement: near-identical words and exactly the same numbers
                if _jaccard(group[0][2], item[2]) >= self.same and _numbers(group[0][2]) == _numbers(item[2]):
                    group.append(item)
                    break
            else:
                groups.append([item])
        facts = []
        for group in groups:
            episodes = tuple(dict.fromkeys(e for e, _, _ in group))
            if len(episodes) >= 2:
                facts.append(CandidateFact(_wording(group), episodes, "fact", ("dream", "recurring")))
        return facts, [group[0][2] for group in groups if len({e for e, _, _ in group}) >= 2]

    def _summary(self, items: list[tuple[str, str, frozenset[str]]], df: Counter, n_eps: int,
                 said_again: list[frozenset[str]]) -> CandidateFact | None:
        """The most central sentences (recurring words, one sentence an episode, none already a
        recurring fact, each sharing a word with the most central one), in time order."""
        if n_eps < 2:
            return None
        scored = []
        for order, (ep_id, sent, ts) in enumerate(items):
            weight = sum(df[t] - 1 for t in ts) / math.sqrt(len(ts))
            if weight > 0:
                scored.append((weight, order, ep_id, sent))
        chosen: dict[str, tuple[int, str]] = {}
        taken = list(said_again)
        topic: frozenset[str] | None = None  # the most central sentence's words: what the summary is about
        for _, order, ep_id, sent in sorted(scored, key=lambda s: (-s[0], s[1])):
            ts = items[order][2]
            if topic is not None and not _about(ts & topic):
                continue
            if ep_id not in chosen and all(_jaccard(ts, t) < self.same for t in taken):
                topic = ts if topic is None else topic
                chosen[ep_id] = (order, sent)
                taken.append(ts)
            if len(chosen) >= self.summary_sentences:
                break
        if len(chosen) < 2:
            return None
        picked = sorted(chosen.items(), key=lambda kv: kv[1][0])
        top = [t for t, _ in df.most_common(3) if df[t] > 1]
        return CandidateFact(" ".join(s if s.endswith((".", "!", "?")) else s + "." for _, (_, s) in picked),
                             tuple(e for e, _ in picked), "summary", ("dream", "summary"),
                             meta={"theme": ", ".join(top)})


PROMPT = """You consolidate an agent's memory. Below are numbered episodes from its history that are about
one topic. Write the lasting facts they support, one per line, as `- <fact> [<episode numbers>]`, citing
only the episodes that state the fact. No fact without a citation; at most 5 lines; no commentary."""
_CITES = re.compile(r"[\d,\s]+")


def fact_line(line: str) -> tuple[str, str] | None:
    r"""(fact, cited numbers) of a model's line `- <fact> [<episode numbers>]` (a closing period allowed),
    None for any other line. Not one pattern: `^\s*[-*]?\s*(.+?)\s*\[([\d,\s]+)\]\s*\.?\s*$` backtracks
    quadratically over a run of spaces inside `re`, which holds the interpreter's lock, so the agent's
    turn would wait for the dream's thread (docs/decisions/0018)."""
    text = line.strip()
    text = text[:-1].rstrip() if text.endswith(".") else text
    start = text.rfind("[")  # the numbers hold no "[": theirs is the line's last
    if not text.endswith("]") or start < 0 or not _CITES.fullmatch(text, start + 1, len(text) - 1):
        return None
    fact = text[:start].strip()
    fact = fact[1:].strip() if fact.startswith(("-", "*")) else fact
    return (fact, text[start + 1:-1]) if fact else None


class LLMSummariser:
    """The model writes the facts; citations are checked against the cluster, so provenance is exact.

    `stopping` (the Dreamer sets it to its stop event): once set, a model call under way is abandoned
    and no new one is made, and `summarise` returns no candidates (the dreamer writes nothing of that
    batch, so it is dreamt whole next time). Why: the call waited for the endpoint, up to llmTimeout,
    and Ctrl-C during the session-end dream sat it out (the agent's own calls were abandoned at once).
    """

    def __init__(self, llm: Any, fallback: ExtractiveSummariser | None = None, max_chars: int = 6000,
                 stopping: threading.Event | None = None) -> None:
        self.llm, self.fallback, self.max_chars = llm, fallback or ExtractiveSummariser(), max_chars
        self.name = f"llm:{getattr(llm, 'name', 'model')}"
        self.failures = 0
        self.stopping = stopping

    def summarise(self, cluster: Sequence[DreamEpisode], ignore: frozenset[str] = frozenset()) -> list[CandidateFact]:
        from mettaclaw.llm import LLMError, call_in_thread

        if self.stopping is not None and self.stopping.is_set():
            return []

        listing, used, listed = [], 0, set()
        for n, ep in enumerate(cluster, start=1):
            said = " ".join(chat_prose(ep.text).split())  # the model sees no pasted code to make facts of
            if not said:
                continue
            line = f"[{n}] {said[:600]}"
            if used + len(line) > self.max_chars:
                break
            listing.append(line)
            listed.add(n)
            used += len(line)
        if not listing:
            return []
        try:
            # in a daemon thread, waited for here, as the agent's own calls are (runtime._complete)
            reply = call_in_thread(lambda: self.llm.complete(PROMPT, "\n".join(listing)), stopping=self.stopping,
                                   what="dream summariser call")
        except LLMError as err:
            if self.stopping is not None and self.stopping.is_set():
                log.info("dream summariser: the model call was abandoned: the dream is stopping")
                return []
            self.failures += 1
            log.warning("dream summariser: model failed (%s); using the extractive summariser", err)
            return self.fallback.summarise(cluster, ignore)
        facts = []
        for line in reply.splitlines():
            found = fact_line(line)
            if found is None:
                continue
            fact, cited = found
            cites = [int(c) for c in re.findall(r"\d+", cited) if int(c) in listed]
            episodes = tuple(dict.fromkeys(cluster[c - 1].id for c in cites))
            if len(fact) > MAX_CONTENT:  # the store refuses it, and that failed the whole dream
                log.warning("dream summariser: a fact of %d characters from the model dropped", len(fact))
                continue
            if episodes:
                facts.append(CandidateFact(fact, episodes, "fact", ("dream", "llm")))
        return facts[:5]
