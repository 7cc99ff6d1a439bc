"""Text as every part of memory reads it: one word splitter, one stop-word list, one stemmer, one
sentence splitter.

Why one of each: BM25 over memories, BM25 over semantic records, the dream's recurrence counts and
the relevance floor must agree on what a word is. When they disagreed, a word one part stemmed
("paintings" -> "paint") was a different word to another, and a fact could rank in one list and
vanish from the next.
"""

from __future__ import annotations

import functools
import re

_WORD = re.compile(r"[^\W_]+")  # letters and digits of any script ("café", "日本"), no underscores
_POSSESSIVE = re.compile(r"['\u2019]s\b")
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")  # where one sentence ends and the next begins
MIN_SENTENCE = 8  # characters: shorter pieces ("Hi!", "Ok.") are not statements

_STOP_TEXT = (
    "a an the and or but if of to in on at for with by from as is are was were be been being am do does did "
    "have has had having i you he she it we they me him her us them my your his its our their mine yours "
    "this that these those what which who whom whose when where why how not no nor so than too very can "
    "will just would could should shall may might must about into onto over after before again then once "
    "there here all any both each few more most other some such only own same s t d ll m re ve don now also "
    "up out off hey hi oh yeah yes ok okay really wow thanks thank yep yup nope lol haha hmm awesome cool great "
    "nice glad congrats congratulations amazing sounds totally definitely absolutely super sure gonna wanna"
)  # the last line: what people say to keep a chat going, which no memory is about
STOPWORDS = frozenset(_STOP_TEXT.split())


def words(text: str) -> list[str]:
    """Lower-case words of letters and digits; a possessive 's is dropped ("Alice's" -> "alice")."""
    return _WORD.findall(_POSSESSIVE.sub("", text.casefold()))


@functools.lru_cache(maxsize=1 << 18)  # a vocabulary is small; opening 100k memories stems millions of words
def stem(word: str) -> str:
    """A deliberately light stemmer: 'paintings'/'painted' -> 'paint', 'stories' -> 'story', 'running' -> 'run'."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ingly", "edly", "ing", "ied", "ed", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if suffix == "ied":
                return base + "y"
            if suffix in ("ing", "ed") and len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "aeiouls":
                return base[:-1]  # running -> run, planned -> plan
            return base
    if len(word) >= 4 and word.endswith("e") and not word.endswith("ee"):
        word = word[:-1]  # share/shared/sharing -> shar: one root for the -e verbs
    return word


def terms(text: str) -> list[str]:
    """Content terms: words without stop words, stemmed. What BM25 indexes and what recurrence counts."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


def sentences(text: str, limit: int = 50) -> list[str]:
    """The statements of a text (at most `limit`), split after . ! ? and at line breaks."""
    return [s.strip() for s in SENTENCE_BREAK.split(text) if s and len(s.strip()) >= MIN_SENTENCE][:limit]


@functools.lru_cache(maxsize=1 << 16)  # recall compares the same candidates' texts query after query
def term_set(text: str) -> frozenset[str]:
    """The distinct content terms of a text: what two statements are compared on."""
    return frozenset(terms(text))


_LABEL = re.compile(r"^([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,3}):\s")


def labelled_sentences(text: str) -> list[str]:
    """A memory's sentences, each keeping the memory's "Who: " label: a chat line's later sentences
    are still that person's ("Melanie: Yep. I'm off swimming." says Melanie swims)."""
    found = sentences(text) or [text]
    label = _LABEL.match(text)
    if label is None:
        return found
    return [s if s.startswith(label.group(0)) else label.group(0) + s for s in found]


@functools.lru_cache(maxsize=1 << 16)  # recall asks it of the same candidates query after query
def speakers(text: str) -> frozenset[str]:
    """Who a memory quotes: the "Who: " labels its sentences begin with (a chat line, or a theme or
    summary of what someone said); empty when it quotes nobody."""
    return frozenset(m.group(1) for s in (sentences(text) or [text]) if (m := _LABEL.match(s)))
