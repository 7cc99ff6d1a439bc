"""Concepts named in an episode (people, places, objects, actions) -> find-or-create in semantic memory.

Extraction is deliberately shallow and offline: capitalised names (people, or places after in/at/from),
the head noun after a determiner or possessive (objects), and the skills the agent used (actions).
Every concept goes through `SemanticMemory.learn` (kind `concept`), so the same name in a new episode
reinforces one record and appends the episode to its provenance (a DERIVED_FROM edge) instead of
making a duplicate; co-occurring concepts get RELATED_TO edges from the semantic layer itself.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.text import STOPWORDS, label, prose, sentence_starts
from mettaclaw.memory.episodes.index import MEMORY_SKILLS
from mettaclaw.memory.semantic.normalize import normalize_name

from .episodes import DreamEpisode

log = logging.getLogger(__name__)

MAX_PER_EPISODE = 8
# a capitalised word or two, with a street's abbreviation after it ("Main St") or a saint's, a
# mount's or a fort's before it ("St. Louis", "Mt Hood"); not part of an identifier: no letter, dot or
# underscore joined to it, no call after it ("os.Path", "Foo.bar", "Parse("), no "n't" ("Haven't", "Isn't")
_NAME = re.compile(r"(?<![\w'.])((?:(?:St|Mt|Ft)\.?\s)?[A-Z][a-z]{2,}(?:\s[A-Z][a-z]{2,})?(?:\s(?:St|Rd|Dr|Ln|Ct|Sq|Pl|Av)\b)?)"
                   r"(?!\w|\.\w|\(|::|['\u2019]t\b)")
_OBJECT = re.compile(r"\b(?:a|an|the|my|your|his|her|our|their|this|that|some)\s+([a-z][a-z-]{2,})\b")
_PLACE_BEFORE = re.compile(r"\b(?:in|at|from|near|to)\s+$")
_NOT_NAMES = frozenset(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december", "today", "tomorrow", "yesterday", "tonight", "hey", "hello", "thanks", "thank", "yes", "yeah", "sure", "okay", "wow", "great", "good", "nice", "well", "what", "when", "where", "why", "how", "who", "which", "this", "that", "these", "those", "there", "here", "the", "and", "but", "also", "just", "really", "please", "sorry", "human_message", "error_feedback",
                        "last", "next", "bye", "goodbye"])  # "Last Friday", "Bye Joanna": when, and who
_STARTERS = frozenset(["sounds", "looks", "let", "let's", "went", "got", "maybe", "love", "glad", "congrats",
                       "awesome", "cool", "definitely", "totally", "absolutely", "haha", "lol", "exactly", "agreed",
                       "hope", "omg", "wish", "make", "take", "keep", "try", "feel", "still", "anyway", "plus",
                       "since", "because", "after", "before", "then", "now", "thats", "sounds", "nope", "hmm",
                       "some", "any", "every", "each", "most", "many", "much", "our", "one", "two", "both",
                       "did", "does", "had", "have", "been", "being", "was", "were", "yep", "ah", "ooh", "same",
                       # what else begins a chat's sentences: someone or something of no one in particular,
                       # how often or how much, a sound, a word that asks or bids ("Anything new?", "Lately
                       # I ...", "Aww, ...", "Appreciate it!", "Talk soon")
                       "anything", "everything", "something", "nothing", "anyone", "everyone", "someone",
                       "anybody", "everybody", "somebody", "nobody", "always", "never", "sometimes", "often",
                       "even", "perhaps", "already", "almost", "whenever", "however", "though", "although",
                       "besides", "instead", "indeed", "anyways", "anytime", "somewhere", "everywhere", "someday",
                       "together", "enough", "quite", "overall", "later", "lots", "pretty", "kinda", "gotta",
                       "alright", "btw", "ttyl", "aww", "awww", "woah", "whoa", "woohoo", "woo", "yay", "oof",
                       "ugh", "ouch", "phew", "oops", "hmmm", "mmm", "nah", "yea", "yum", "cheers", "gotcha",
                       "kudos", "dang", "bummer", "appreciate", "talk", "see", "check", "look", "enjoy", "guess",
                       "tell", "believe", "catch", "stay", "cherish", "need", "want", "agree", "remind", "reminds",
                       "feels", "seems", "means", "makes", "takes", "gives", "bet", "come", "give", "get", "put",
                       "show", "speak", "hold", "follow", "relax", "understand", "imagine", "thought", "heard",
                       "took", "found", "met", "made", "felt", "tried", "started", "joined", "loved", "missed",
                       "lost", "won", "seen", "used", "excited", "happy", "lucky", "proud", "crazy", "funny"])
# the shapes of words that are no one's name, as a sentence's first word that is nowhere else written
# with a capital: a gerund ("Painting helps me relax", "Seeing you ..."), an adverb ("Honestly",
# "Hopefully"; not a name's -lly, -rly: "Kelly", "Beverly"), an abstract noun or adjective ("Kindness",
# "Adoption", "Wonderful", "Precious")
_ORDINARY_SHAPE = re.compile(r"^[a-z]{3,}(?:ing|ness|ment|tion|sion|ship|ism|ful|ous|ible|able)$"
                             r"|^[a-z]{4,}(?<![lr])ly$|^[a-z]{3,}[au]lly$")
# times of day, of the week and of the year, and holidays: when something happened, never who or what
CALENDAR = frozenset(["day", "days", "week", "weeks", "weekend", "weekends", "month", "months", "year", "years",
                      "morning", "afternoon", "evening", "night", "tonight", "noon", "midnight", "hour", "hours",
                      "minute", "minutes", "spring", "summer", "autumn", "fall", "winter", "christmas", "easter",
                      "holiday", "holidays", "birthday", "anniversary", "weekday", "season"])
# the agent's skills: a name in a reply ("Remember to ...", "the shell") is no person or object, and the
# memory's own bookkeeping (pin, send, remember, query, ...) is no action worth a concept
BOOKKEEPING = MEMORY_SKILLS | {"pin", "send"}
SKILL_WORDS = BOOKKEEPING | {"shell", "read-file", "write-file", "append-file", "metta", "search", "nal", "pln", "infer"}
_NOT_NAMES = _NOT_NAMES | CALENDAR | SKILL_WORDS
# the last word of a place's name: a street, a square, a station, a river ("Elm Street", "Main St",
# "Baker Avenue", "Hudson River"). The words that are surnames too ("Lois Lane", "Benny Hill", "Grace
# Park") make a place only after a house number ("12 Park Lane") or a place's preposition (in, at, ...)
PLACE_WORDS = frozenset(["street", "st", "road", "rd", "avenue", "ave", "av", "boulevard", "blvd", "drive", "dr",
                         "square", "sq", "terrace", "crescent", "parkway", "highway", "hwy", "alley", "plaza",
                         "station", "airport", "harbour", "harbor", "river", "valley", "island", "islands", "county",
                         "ct", "ln", "pl"])
MAYBE_PLACE_WORDS = frozenset(["lane", "way", "court", "close", "place", "park", "hill", "row", "gardens", "bridge",
                               "bay", "lake", "beach", "green", "walk", "mews", "grove"])
_HOUSE_NUMBER = re.compile(r"\b\d+[A-Za-z]?,?\s+$")
# words of programs and their failures: a traceback, an exception, a value ("None of us", "Traceback")
CODE_WORDS = frozenset(["traceback", "stacktrace", "exception", "error", "warning", "segfault", "null", "none",
                        "nan", "true", "false", "undefined", "todo", "fixme"])
_COMMON_START = STOPWORDS | _STARTERS  # a capital here is just the start of a sentence
# the words before a saint's, a mount's, a lake's, a fort's or a city's name ("St. Louis", "Mount
# Rainier", "Lake Tahoe", "Fort Worth", "San Diego", "Santa Cruz", "New York"): a place, not a person
PLACE_PREFIXES = frozenset(["st", "mt", "ft", "mount", "lake", "fort", "san", "santa", "new"])
# programming languages and the tools people use, learn or switch between ("I switched from Python to
# Rust"): neither a person nor a place, but a thing someone uses. A name that may be a person's too
# ("Ruby", "Julia", "Swift", "Java") is a tool only where someone uses or learns it (`_TOOL_USE`), or
# beside a tool ("Python and Ruby")
TOOLS = frozenset(["python", "javascript", "typescript", "kotlin", "haskell", "golang", "rust", "php", "cobol",
                   "fortran", "clojure", "erlang", "elixir", "scala", "matlab", "perl", "lua", "docker", "kubernetes",
                   "linux", "ubuntu", "github", "gitlab", "postgres", "postgresql", "mysql", "sqlite", "mongodb",
                   "redis", "django", "numpy", "pytorch", "tensorflow", "excel", "photoshop", "figma", "jira",
                   "vscode", "emacs", "vim", "wordpress", "salesforce", "tableau"])
_TOOL_USE = re.compile(r"\b(?:use|uses|used|using|learn|learns|learned|learnt|learning|install|installs|installed|"
                       r"installing|(?:switch|switches|switched|switching|migrate|migrated|migrating)\s+(?:from|to)|"
                       r"(?:code|coded|coding|program|programmed|programming|script|scripting)\s+in)\s+$",
                       re.IGNORECASE)
_TOOL_JOIN = re.compile(r"^(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|to|from|then|than|over|vs\.?|&)\s+|\s*/\s*)$")
_NOT_OBJECTS = frozenset(["way", "time", "lot", "thing", "things", "something", "anything", "everything", "nothing", "bit", "kind", "sort", "day", "week", "year", "moment", "idea", "best", "most", "same", "other", "first", "last", "next", "new", "good", "great"])


def code_word(word: str) -> bool:
    """Whether a capitalised word names a part of a program, not a person: a programming word
    (`CODE_WORDS`) or an exception class, whose name ends in Error, Exception or Warning."""
    low = word.lower()
    return low in CODE_WORDS or low.endswith(("error", "exception", "warning"))


def ordinary_word(word: str) -> bool:
    """Whether a capitalised word at a sentence's start is only that sentence's first word: a common
    start (`_COMMON_START`) or a word of a shape no name has (`_ORDINARY_SHAPE`)."""
    low = word.lower()
    return low in _COMMON_START or bool(_ORDINARY_SHAPE.match(low))


def tool_name(parts: list[str], before: str, after: str) -> bool:
    """Whether a name is a language's or a tool's someone uses (`TOOLS`), or any name right after
    using or learning it (`_TOOL_USE`, `before` the text before it): "learning Ruby", "coding in
    Julia", but "Ruby's bike" is Ruby's (`after`, the text after it)."""
    if any(p.lower() in TOOLS for p in parts):
        return True
    return bool(_TOOL_USE.search(before)) and not after.startswith(("'s", "\u2019s"))


def place_name(parts: list[str], before: str) -> bool:
    """Whether a name is a place's: after a place's preposition (`before`, the text before it), or
    ending in a street's, a station's or a river's word (`PLACE_WORDS`), or after a place's prefix
    (`PLACE_PREFIXES`, "St. Louis", "Lake Tahoe"), or after a house number in a word that may also be
    a surname ("12 Park Lane", but "Lois Lane")."""
    last = parts[-1].lower()
    if _PLACE_BEFORE.search(before) or (len(parts) > 1 and last in PLACE_WORDS):
        return True
    if len(parts) > 1 and parts[0].lower().rstrip(".") in PLACE_PREFIXES:
        return True
    return len(parts) > 1 and last in MAYBE_PLACE_WORDS and bool(_HOUSE_NUMBER.search(before))


@dataclass(frozen=True)
class Mention:
    name: str
    category: str  # person | place | object | action


_COLON = re.compile(r":\s*")


def _sentence_starts(text: str) -> set[int]:
    """Where a capitalised word may be capitalised only for where it stands: where a sentence begins
    (`text.sentence_starts`, the one sentence rule) and after a colon ("Note: Paris ...")."""
    return set(sentence_starts(text)) | {m.end() for m in _COLON.finditer(text)}


def _speakers_at(text: str) -> set[int]:
    """Where a line's "Who: " label (`text.label`) begins: a speaker's name, whatever its shape."""
    return {at for at in [0, *(m.end() for m in re.finditer("\n", text))] if label(text[at:at + 200])}


def extract(text: str, actions: Iterable[str] = ()) -> list[Mention]:
    """The concepts one episode names, in order of first mention, at most MAX_PER_EPISODE."""
    found: dict[str, Mention] = {}
    text = prose(text)  # a pasted traceback names no one: its "Traceback" and "File" were people
    starts, speakers = _sentence_starts(text), _speakers_at(text)
    capitalised = {m.group(1) for m in _NAME.finditer(text) if m.start() not in starts}
    tool_end = -1  # where the last tool's name ended: "Python and Ruby" names two tools
    for m in _NAME.finditer(text):
        parts, start = m.group(1).split(), m.start()
        while parts and (parts[0].lower() in _NOT_NAMES or (start in starts and start not in speakers
                                                             and m.group(1) not in capitalised
                                                             and ordinary_word(parts[0]))):
            start += len(parts[0]) + 1  # "Yesterday Alice": the name is Alice
            parts = parts[1:]
        if not parts or any(code_word(p) for p in parts):  # "Traceback", "KeyError": no one, nowhere
            continue
        if len(parts) > 1 and parts[0].lower().rstrip(".") in PLACE_PREFIXES and parts[1].lower() in CALENDAR:
            continue  # "New Year": when, not where
        name, before = " ".join(parts), text[max(0, start - 40) : start]
        if tool_name(parts, before, text[m.end() : m.end() + 2]) or (
                tool_end >= 0 and _TOOL_JOIN.match(text[tool_end:start])):
            category, tool_end = "object", m.end()
        else:
            category = "place" if place_name(parts, before[-8:]) else "person"
        found.setdefault(normalize_name(name), Mention(name, category))
    for m in _OBJECT.finditer(text):
        word = m.group(1)
        if word in STOPWORDS or word in _NOT_OBJECTS or word in CALENDAR or word in SKILL_WORDS or word.endswith("ly"):
            continue
        found.setdefault(normalize_name(word), Mention(word, "object"))
    for action in actions:
        if action not in BOOKKEEPING:
            found.setdefault(normalize_name(action), Mention(action, "action"))
    return list(found.values())[:MAX_PER_EPISODE]


def learn_concepts(semantic: Any, episode: DreamEpisode) -> dict[str, int]:
    """Find-or-create every concept the episode names, citing the episode; counts by action. A mention
    semantic memory refuses as a record (a made-up skill `ep-5`, shaped like an id; a word of 5,000
    letters, past a record's length) is skipped: it raised out of here, the dream never moved past
    that episode, and no later episode got its concepts nor the scheduled dream its turn."""
    counts: dict[str, int] = {}
    for mention in extract(episode.text, episode.actions):
        try:
            res = semantic.learn(mention.name, name=mention.name, kind="concept", category=mention.category,
                                 source_episodes=[episode.id], provenance="episodic_consolidation",
                                 tags=("concept", mention.category), scope=episode.meta.get("scope", scopes.DEFAULT))
        except ValueError as err:
            log.info("no concept from %r in %s: %s", mention.name[:60], episode.id, str(err)[:200])
            continue
        action = "reinforced" if res.action == "merged" else res.action  # same name: one concept confirmed
        counts[action] = counts.get(action, 0) + 1
    return counts
