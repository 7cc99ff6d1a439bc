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
import threading
from collections.abc import Sequence

import Stemmer

from mettaclaw.messages import MAX_NAME  # how far into a line a sender's label can end

_WORD = re.compile(r"[^\W_]+")  # letters and digits of any script ("café", "日本"), no underscores
_POSSESSIVE = re.compile(r"['\u2019]s\b")
# Where one sentence may end and the next begin: after . ! ? (a run of them, then any closing quotes or
# brackets) and the space after, or at a line break (`sentence_starts` says which of these end one).
_MAYBE_BREAK = re.compile(r"([.!?]+)[\"'\u201d\u2019)\]]*\s+|\s*\n\s*")
_LAST_WORD = re.compile(r"\w+\Z")
# titles and places' abbreviations a period follows without ending a sentence ("Dr. Okafor", "St. Louis")
ABBREVIATIONS = frozenset(["st", "mt", "ft", "dr", "mr", "mrs", "ms", "jr", "sr", "prof"])
MAX_SENTENCES = 50  # of one memory: what recall compares with a question
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


# Han and kana: scripts written without spaces, where a "word" of _WORD is a whole clause
# ("我喜欢喝绿茶和乌龙茶"), which no query word equals; such a run is read as its overlapping character
# pairs instead (绿茶 is one of them), as search engines index Chinese and Japanese without a dictionary.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]+")


def words(text: str) -> list[str]:
    """Lower-case words of letters and digits; a possessive 's is dropped ("Alice's" -> "alice"); Han
    and kana runs become their character pairs (a lone character stays itself)."""
    found = _WORD.findall(_POSSESSIVE.sub("", text.casefold()))
    if text.isascii():
        return found
    return [piece for word in found for piece in _unspaced_pieces(word)]


def _unspaced_pieces(word: str) -> list[str]:
    pieces, pos = [], 0
    for run in _UNSPACED.finditer(word):
        if run.start() > pos:
            pieces.append(word[pos:run.start()])
        chars = run.group()
        pieces += [chars] if len(chars) == 1 else [chars[i:i + 2] for i in range(len(chars) - 1)]
        pos = run.end()
    if pos < len(word):
        pieces.append(word[pos:])
    return pieces


_STEMMERS = threading.local()  # a Snowball stemmer keeps buffers per call: one per thread (turn and dream)
# what `terms` makes; stores that keep terms (BM25, FTS5) re-index when it changes (2: Han and kana pairs)
TERMS_VERSION = "snowball-english-2"


@functools.lru_cache(maxsize=1 << 18)  # a vocabulary is small; opening 100k memories stems millions of words
def stem(word: str) -> str:
    """Snowball's English stem ('paintings'/'painted' -> 'paint', 'families'/'family' -> 'famili').

    Why Snowball (PyStemmer) and not a few hand-written suffix rules: the rules this replaced made
    "family" 'fami' but "families" 'family' (so neither found the other), and joined words that have
    nothing in common: "Sally" and "sale", "James" and "jam", "Jones" and "Jon", "times" and "Tim",
    "news" and "new", "early" and "ear", "reply" and "rep". A name sharing a stem with a common word
    made every turn of that person a BM25 hit for the word."""
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = Stemmer.Stemmer("english")
        stemmer.maxCacheSize = 0  # this function's cache serves instead, for every thread
    return str(stemmer.stemWord(word))


def terms(text: str) -> list[str]:
    """Content terms: words without stop words, stemmed. What BM25 indexes and what recurrence counts."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


MAX_QUERY_CHARS = 20_000  # a question, or a paragraph to find what relates to it; not a whole document


def check_query(query: str) -> None:
    """Refuse a query past MAX_QUERY_CHARS with the reason: every character of it is tokenized and
    searched for (docs/decisions/0018), and its text keys the caches."""
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"the query is {len(query):,} characters long; at most {MAX_QUERY_CHARS:,}: "
                         "ask about one thing, or quote the part that matters")


# How a question frames what it asks ("what kind of art", "tell me about Emma", "do you remember ..."):
# words no memory is about. Only questions drop them; "a kind word" or "I told him" stay indexed.
_QUESTION_FRAME = re.compile(r"\b(?:kinds?|types?|sorts?) of\b|\b(?:tell|remind) me\b|\bdo you (?:know|remember|recall)\b",
                             re.IGNORECASE)


@functools.lru_cache(maxsize=1 << 12)
def query_terms(query: str) -> tuple[str, ...]:
    """The content terms a question asks about: `terms` without its frame. "What kind of art does
    Caroline make?" asks about art, not about "kind": as a term it found "Your kind words mean a lot"."""
    return tuple(terms(_QUESTION_FRAME.sub(" ", query)))


FIRST_PERSON = frozenset(("i", "me", "my", "mine", "myself"))  # what makes a question about its asker


# What the one asked did or said before ("how did you recommend ...", "what have you told me", "the plan
# you suggested"): past only, as "what would you suggest for my trip" asks for advice now.
_ADDRESSEE_DID = re.compile(r"\b(?:did|have|had) you\b|\byou (?:\w+ed|said|told|gave|wrote|sent|showed|thought)\b",
                            re.IGNORECASE)


def asks_about_asker(query: str) -> bool:
    """Whether a question is about the one asking it ("what is my password", "where do I live now"),
    its frame aside ("remind me when the dentist is" asks about the dentist); not one about what the
    one asked did or said ("how did you recommend I plan my week": the answer is in the other's words,
    and the asker's own lines sharing its words came first)."""
    frame_aside = _QUESTION_FRAME.sub(" ", query)
    return bool(FIRST_PERSON & set(words(frame_aside))) and not _ADDRESSEE_DID.search(frame_aside)


_ASKING = frozenset(("what", "where", "when", "who", "whom", "whose", "which", "why", "how", "do", "does", "did",
                     "is", "are", "am", "was", "were", "can", "could", "will", "would", "should", "shall"))


def only_asks(text: str, known: frozenset[str] = frozenset()) -> bool:
    """Whether every sentence of a memory (its speaker's label aside) is a question: it ends with "?" or
    begins with an asking word, as chat questions often come without one ("what is my password")."""
    said = [s for s in (s.removeprefix(label(s, known) or "").strip() for s in labelled_sentences(text, known)) if words(s)]
    return bool(said) and all(s.endswith("?") or words(s)[0] in _ASKING for s in said)


# Greetings and sign-offs: with the chat fillers among the stop words, what a line that says nothing is
# made of ("morning!", "good night all", "see ya later"). Not stop words: "morning" is a content word of
# "what did Sam do in the morning".
GREETINGS = frozenset(("morning", "evening", "afternoon", "night", "good", "bye", "goodbye", "hello", "hiya",
                       "cheers", "np", "ty", "thx", "welcome", "later", "see", "ya", "k", "kk", "alright",
                       "fine", "hehe", "omg", "yay", "sup", "gm", "gn", "brb", "btw", "guys", "all", "everyone",
                       "folks", "too", "lmao", "xd", "ha", "ah", "uh", "um", "hm", "mhm", "right", "agreed"))
MAX_EMPTY_WORDS = 8  # a longer line of fillers is rare, and may be a sentence whose stop words matter


def says_nothing(text: str, known: frozenset[str] = frozenset()) -> bool:
    """Whether a line is an acknowledgement or a greeting ("ok", "lol thanks!", "morning!", "good night
    all"): at most MAX_EMPTY_WORDS words, its speaker's label aside, each a stop word or a greeting.
    Why: such a line is close to every question in a small embedding space and, through the words
    its neighbours lend it, in BM25, and it answers none of them."""
    if len(text) > MAX_NAME + 2 + MAX_EMPTY_WORDS * 20:  # far too long for so few words: not read at all
        return False
    said = words(text.removeprefix(label(text, known) or ""))
    return len(said) <= MAX_EMPTY_WORDS and all(w in STOPWORDS or w in GREETINGS for w in said)


def asks_again(text: str, wanted: frozenset[str], known: frozenset[str] = frozenset()) -> bool:
    """Whether a memory only asks (`only_asks`) about what a question of the content terms `wanted`
    asks, adding no term of its own: someone's earlier asking of the same question, which holds its
    words and answers nothing. A question that tells something ("did you know my sister married in
    Rome?") adds terms, and stays a hit."""
    own = term_set(text.removeprefix(label(text, known) or ""))
    return bool(own) and own <= wanted and only_asks(text, known)


def _ends_sentence(text: str, found: re.Match[str]) -> bool:
    """Whether a candidate end (_MAYBE_BREAK) ends a sentence: all do but a period after a title
    (ABBREVIATIONS) or an initial, one capital letter but the pronoun I ("J.K. Rowling"; "So do I. We")."""
    if found[1] != ".":
        return True
    before = _LAST_WORD.search(text, max(0, found.start() - 6), found.start())  # the longest title is 4 letters
    if before is None:
        return True
    word = before.group()
    return not (word.lower() in ABBREVIATIONS or (len(word) == 1 and word.isupper() and word != "I"))


def sentence_starts(text: str) -> list[int]:
    """Where each sentence of `text` begins (0 first): the one sentence rule, which every reader of
    sentences shares (recall's sentence vectors, the dream's summaries, themes and concepts), so that a
    sentence is the same unit to all of them. A sentence ends after . ! ? and the space after them (not
    after a title's or an initial's period) and at every line break."""
    return [0] + [m.end() for m in _MAYBE_BREAK.finditer(text) if m.end() < len(text) and _ends_sentence(text, m)]


def split_sentences(text: str) -> list[str]:
    """`text` cut where its sentences begin (`sentence_starts`), each piece stripped, empty ones left out."""
    starts = sentence_starts(text)
    pieces = (text[a:b].strip() for a, b in zip(starts, [*starts[1:], len(text)], strict=True))
    return [piece for piece in pieces if piece]


def sentences(text: str, limit: int = MAX_SENTENCES) -> list[str]:
    """The statements of a text (at most `limit`): its sentences (`sentence_starts`) of MIN_SENTENCE
    characters or more."""
    return [s for s in split_sentences(text) if len(s) >= MIN_SENTENCE][:limit]


@functools.lru_cache(maxsize=1 << 16)  # recall compares the same candidates' texts query after query
def term_set(text: str) -> frozenset[str]:
    """The distinct content terms of a text: what two statements are compared on."""
    return frozenset(terms(text))


_LABEL = re.compile(r"^([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,3}):\s")
# an exception's class, bare or in its module ("ValueError", "requests.exceptions.HTTPError"): what a
# traceback's last line begins with, in a speaker label's shape (`label`) and a code line's (`code_line`)
_EXCEPTION = r"(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Warning|Interrupt|Exit)"
_EXCEPTION_NAME = re.compile(_EXCEPTION)


def label(line: str, known: frozenset[str] = frozenset()) -> str | None:
    """The "Who: " a line begins with (colon and space included), or None: a capitalised name of up to
    four words (_LABEL), or any name of `known` (the senders memory has, `LongTermMemory.senders`).

    Why the known names: a channel writes each message as "<sender>: <text>" (`Message.shown`), and
    IRC nicks are mostly lower-case ("bob", "alice_92"), which _LABEL does not take, so "bob: I sold
    my car" quoted no one. Their shape cannot tell them from prose ("note: buy milk", "re: the wifi"),
    but the senders memory has are the names such a label was written from. A capitalised label is
    read as before, known or not: a record written with no turn of its speaker ("Alice: I paint.",
    learned or imported) still quotes her; an exception's name (`_EXCEPTION`) only when it is a known
    sender's: "ValueError: invalid literal for int()" quoted "ValueError", a traceback's words a person's."""
    if (found := _LABEL.match(line)) and not _EXCEPTION_NAME.fullmatch(found.group(1)):
        return found.group(0)
    at = line.find(":", 1, MAX_NAME + 1) if known else -1
    while at > 0:
        if line[at + 1 : at + 2].isspace() and line[:at] in known:
            return line[: at + 2]
        at = line.find(":", at + 1, MAX_NAME + 1)
    return None


def labelled_sentences(text: str, known: frozenset[str] = frozenset(), limit: int = MAX_SENTENCES) -> list[str]:
    """A memory's sentences, each keeping the "Who: " label (`label`, of `known` senders) of the line
    it is in: a chat line's later sentences are still that person's ("Melanie: Yep. I'm off swimming."
    says Melanie swims).

    A line with a label of its own labels its sentences: in a turn where several people spoke (one
    line each, `messages.shown`) "Alice: ...\nBob: nice, enjoy!" gave "Alice: Bob: nice, enjoy!", Bob's
    words embedded as Alice's. Within a line, a known sender's label starts that sender's sentences: a
    dream's record names each speaker once per run ("Sam: I paint. Ann: Lovely colours!", `attributed`),
    also after a piece too short to be a sentence ("Ann: Oh!"); any other "Word: " there is prose ("Note:
    the shop closes at 5"). A memory that does not begin with a label is left as it is."""
    current = label(text, known)
    if current is None:
        return sentences(text, limit) or [text]
    out = []
    for line in text.split("\n"):
        current = label(line.lstrip(), known) or current
        for piece in split_sentences(line):
            if (named := label(piece, known)) and named[:-2] in known:
                current = named
            if len(piece) >= MIN_SENTENCE:
                out.append(piece if piece.startswith(current) else current + piece)
    return out[:limit] or [text]


LONG_TEXT = 1_000  # characters: a memory longer than this is measured, and shown, by its passages
PASSAGE_CHARS = 400  # a passage: consecutive sentences of one speaker up to about this long
MAX_PASSAGES = 48  # of one memory (a passage per 400 characters: the first 19,000 or so are measured)


def passages(text: str, known: frozenset[str] = frozenset()) -> list[str]:
    """The parts a memory is measured by and shown as (`long_passages`), as a new list."""
    return labelled_sentences(text, known) if len(text) <= LONG_TEXT else list(long_passages(text, known))


def measured_parts(text: str, known: frozenset[str] = frozenset(), record: bool = False) -> list[str]:
    """What a memory is measured by, part by part: a dream record's sentences (`record`: a list of
    statements, each from its own episode, however long), anything else's `passages`. The one rule the
    index's sentence vectors and recall's reading of them share."""
    return labelled_sentences(text, known) if record else passages(text, known)


@functools.lru_cache(maxsize=4096)  # recall splits the same long candidates query after query
def long_passages(text: str, known: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The parts a memory is measured by and shown as: its labelled sentences (`labelled_sentences`),
    and for a text longer than LONG_TEXT runs of them of one speaker up to PASSAGE_CHARS each (a longer
    sentence is a passage of its own), at most MAX_PASSAGES.

    Why passages: an assistant's reply or a pasted document has dozens of sentences, and the best of
    many is close to any question by chance, so long texts outranked the short statement that answers;
    a passage is measured on about as much text as a chat message, and it is what the reader needs
    shown, not the whole text."""
    if len(text) <= LONG_TEXT:
        return tuple(labelled_sentences(text, known))
    out: list[str] = []
    who, run = "", ""
    for sentence in labelled_sentences(text, known, limit=MAX_PASSAGES * 40):
        speaker = label(sentence, known) or ""
        bare = sentence.removeprefix(speaker)
        if run and speaker == who and len(run) + 1 + len(bare) <= PASSAGE_CHARS:
            run += " " + bare
            continue
        if run:
            out.append(run)
            if len(out) >= MAX_PASSAGES:
                return tuple(out)
        who, run = speaker, sentence
    return tuple([*out, run][:MAX_PASSAGES] if run else out or [text])


def attributed(lines: Sequence[tuple[str, str]]) -> str:
    """Sentences lifted out of their places keep who said them (`who`, without ": "), named once per run
    of one speaker: how a dream's record quotes people, and how recall shows what is left of one."""
    out, last = [], None
    for who, sent in lines:
        sent = sent if sent.endswith((".", "!", "?")) else sent + "."
        out.append(f"{who}: {sent}" if who and who != last and not sent.startswith(who + ":") else sent)
        last = who
    return " ".join(out)


@functools.lru_cache(maxsize=1 << 16)  # recall asks it of the same candidates query after query
def speakers(text: str, known: frozenset[str] = frozenset()) -> frozenset[str]:
    """Who a memory quotes: the "Who: " labels (`label`, of `known` senders) its sentences begin with
    (a chat line, or a theme or summary of what someone said); empty when it quotes nobody."""
    return frozenset(found[:-2] for s in (sentences(text) or [text]) if (found := label(s, known)))


# What a pasted program, traceback or log looks like, line by line (`code_line`). Each alternative is a
# shape prose does not take: a traceback's header and frames, an exception's name before its message, a
# definition or import, an assignment, a log line's timestamp or level, a shell or REPL prompt.
_CODE_SHAPES = re.compile(
    r"^(?:Traceback \(most recent call last\)"
    r"|File \"[^\"]*\", line \d+"
    rf"|{_EXCEPTION}\b(?::|$)"
    r"|at [\w$.<>]+\(.*\)$"
    r"|(?:async\s+)?(?:def|class|fn|func|function)\s+\w+\s*[(:<{]"
    r"|(?:from\s+[\w.]+\s+)?import\s+[\w.*{]+(?:\s+(?:as|from)\b.*)?;?$"
    r"|(?:return|raise|yield|await|throw|assert)\s+[\w.]*[(\[]|(?:else|try|finally):$|(?:except|elif)\b.*:$"
    r"|(?:if|for|while|with|switch)\s[^!?]*\S:$|(?:const|let|var)\s+\w+\s*=|#include\b|#define\b|@\w+\("
    r"|[\w.\[\]'\"]+\s*(?:[-+*/%|&]|//)?=\s*[^=\s]"
    r"|\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}"
    r"|(?:\[(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL)\]|(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL):[\w.]+:)"
    r"|>>>|\$\s+[a-z][\w./-]*(?:\s|$)|[)\]}]+[;,]?$)")
_CODE_END = re.compile(r"(?:[{;]|\w\([^()]*\)\s*:|=>|->)$")  # a block opened, a statement ended
_CODE_MARKS = re.compile(r"[{}\[\]()<>=;\\|]|\w_\w|\.\w+\(")  # brackets, operators, snake_case, .call(
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_URL = re.compile(r"(?<![\w+.-])[A-Za-z][\w+.-]{0,30}://\S*")  # a bounded scheme: linear on a megabyte line


def code_line(line: str) -> bool:
    """Whether a line reads as code, a traceback or a log rather than as something a person says.

    Why: the dream distils what people said into facts, and a pasted traceback said twice became
    facts ("sam: File "/home/sam/app.py", line 42, in <module>"), its "Traceback" a person. Such a
    paste stays an episode (searchable as it was said); it only makes no knowledge. A line is code by
    its shape (`_CODE_SHAPES`), by how it ends (an opened block, a statement's `;`), or by a density
    of brackets and operators no sentence has."""
    text = line.strip()
    if not text:
        return False
    if _CODE_SHAPES.match(text) or _CODE_END.search(text):
        return True
    bare = _URL.sub(" ", text)  # a link's slashes and query marks are no code
    marks = len(_CODE_MARKS.findall(bare))
    return marks >= 4 and marks >= len(words(bare))


_SENTENCE_END = re.compile(r"[.!?][\"')]*$")


def prose(text: str, known: frozenset[str] = frozenset()) -> str:
    """The text without its code: fenced blocks, lines that read as code (`code_line`, after a
    speaker's "Who: " label, `label`) and the indented lines after them; in a text that is mostly code
    (half of three lines or more), every line that is not a sentence too ("for arg in sys.argv:").
    What is left is what the person said around the paste ("Any idea what is wrong?")."""
    lines = text.split("\n")
    code, fenced, in_code = [False] * len(lines), False, False
    for i, line in enumerate(lines):
        body = line.removeprefix(label(line, known) or "")
        if _FENCE.match(body):
            fenced = in_code = not fenced
            code[i] = True
            continue
        if not body.strip():  # a blank line ends nothing: code has blank lines between its blocks
            continue
        # the whole line too: "ValueError: bad value" has the shape of a label ("Who: ")
        in_code = code[i] = fenced or code_line(body) or code_line(line) or (in_code and body[:1] in (" ", "\t"))
    said = [i for i, line in enumerate(lines) if line.strip()]
    if len(said) >= 3 and 2 * sum(code[i] for i in said) >= len(said):
        for i in said:
            body = lines[i].removeprefix(label(lines[i], known) or "").strip()
            code[i] = code[i] or not (_SENTENCE_END.search(body) and len(words(body)) >= 3)
    return "\n".join(line for line, dropped in zip(lines, code, strict=True) if not dropped)


def chat_prose(text: str, known: frozenset[str] = frozenset()) -> str:
    """What the dream distils of a message: its prose (`prose`), and nothing of a text longer than
    LONG_TEXT (an assistant's reply, a pasted document). Why: such a text is recalled and shown by its
    own passages; its dozens of sentences made themes and summaries that outranked what people said,
    and cost most of the dream's time."""
    return "" if len(text) > LONG_TEXT else prose(text, known)
