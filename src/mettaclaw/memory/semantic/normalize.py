"""Name normalisation and (subject, relation, object) extraction for contradiction detection.

Contradiction is decided on structure, never on vector distance alone: two facts conflict only when
they name the same subject and the same *single-valued* relation (lives in, works at, is married to,
favourite X is, age is, ...) with different objects, or the same triple with opposite polarity.
Everything the extractor does not understand yields no triple, so an unclear sentence can be merged
or added but never supersedes anything: the cost of a missed update is a duplicate, the cost of a
false supersede is a lost fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mettaclaw.memory.core.text import STOPWORDS, words
from mettaclaw.reasoning.atoms import AtomError, parse_truth
from mettaclaw.reasoning.terms import Term, render, term_of
from mettaclaw.sexpr import SexprError, read_all

ARTICLES = frozenset({"a", "an", "the"})
PRONOUNS = frozenset(["he", "she", "they", "it", "we", "you", "him", "her", "them", "his", "hers", "their", "theirs", "this", "that", "there", "one"])
FIRST_PERSON = frozenset({"i", "me", "myself"})

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
def normalize_name(name: str) -> str:
    """`navigate_to_kitchen` -> `navigate kitchen`, `graspObject` -> `grasp object` (the dedup key)."""
    spaced = _CAMEL.sub(" ", name.strip()).replace("_", " ").replace("-", " ")
    tokens = words(spaced)
    kept = [w for w in tokens if w not in STOPWORDS]
    return " ".join(kept or tokens)


def content_key(text: str) -> str:
    """Exact-duplicate key for contents: case, punctuation and articles do not make a new fact."""
    return " ".join(w for w in words(text) if w not in ARTICLES)


def _phrase(text: str) -> str:
    """A noun phrase for comparison: lower case, no leading articles, no possessive, no punctuation."""
    tokens = words(text)
    while tokens and tokens[0] in ARTICLES:
        tokens = tokens[1:]
    return " ".join(tokens)


@dataclass(frozen=True)
class Triple:
    subject: str
    relation: str
    object: str
    polarity: bool = True
    functional: bool = False


# Single-valued relations (canonical name -> phrases that express it, longest first when matched).
VERB_RELATIONS: dict[str, list[str]] = {
    "LIVES_IN": ["lives in", "lives at", "resides in", "resides at", "is living in", "is based in",
                 "has moved to", "moved to", "relocated to", "has relocated to", "now lives in", "now resides in"],
    "WORKS_AT": ["works at", "works for", "is employed by", "is employed at", "is working at",
                 "is working for", "has a job at", "is now working at", "now works at", "now works for"],
    "MARRIED_TO": ["is married to", "is wed to", "got married to", "is now married to"],
    "BORN_IN": ["was born in"],
    "BORN_ON": ["was born on"],
    "LOCATED_IN": ["is located in", "is located at", "are located in", "is kept in", "are kept in",
                   "is stored in", "are stored in", "is parked in", "is parked at", "is placed in",
                   "are placed in", "is now in", "are now in"],
}
FUNCTIONAL_RELATIONS = frozenset(VERB_RELATIONS) | {"AGE", "BIRTH_YEAR", "BORN_WHEN", "TIME", "LOCATED_ON", "LOCATED_UNDER"}

# Attribute synonyms ("X's <attr> is Y") and which attributes hold one value at a time.
ATTR_SYNONYMS = {
    "favorite": "favourite", "fav": "favourite", "color": "colour", "e mail": "email",
    "email address": "email", "e mail address": "email", "phone number": "phone", "telephone number": "phone",
    "telephone": "phone", "mobile number": "phone", "date of birth": "birthday", "birth date": "birthday",
    "job": "occupation", "profession": "occupation", "home town": "hometown", "home address": "address",
    "wife": "spouse", "husband": "spouse", "employer": "employer", "last name": "surname",
    "family name": "surname", "first name": "given name",
}
FUNCTIONAL_ATTRS = frozenset({
    "name", "given name", "surname", "full name", "age", "birthday", "email", "phone", "address", "hometown",
    "nationality", "occupation", "employer", "boss", "manager", "spouse", "height", "weight", "timezone",
    "time zone", "status", "salary", "rank", "title", "capital", "population", "price", "cost", "colour",
    "size", "location", "owner", "password", "blood type", "native language", "deadline", "mother", "father",
})
FUNCTIONAL_ATTR_PREFIXES = ("favourite ", "preferred ", "current ", "main ", "primary ", "number of ")
_ATTR_TO_RELATION = {"spouse": "MARRIED_TO", "age": "AGE", "birthday": "BORN_ON", "address": "LIVES_IN"}

_NUMBER_WORDS = {w: i for i, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"])}
_TIME_OBJECT = re.compile(
    r"^(\d{1,2}(:\d{2})?\s*(am|pm)?|noon|midnight|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"\d{4}-\d{2}-\d{2}.*|(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*( \d{1,4}.*)?|tomorrow|tonight|today|"
    r"(the )?(night|nights|weekends?|mornings?|evenings?|afternoons?|dawn|dusk|daytime|weekdays?)|"
    r"(the )?(spring|summer|autumn|fall|winter)|\d{4})$")
_NEGATIONS = [(r"\bdoes not\b|\bdoesn't\b|\bno longer\b|\bdo not\b|\bdon't\b", ""), (r"\bis not\b|\bisn't\b", "is"),
              (r"\bare not\b|\baren't\b", "are"), (r"\bwas not\b|\bwasn't\b", "was")]


def _subject(raw: str) -> str | None:
    """A resolvable subject or None: pronouns other than the first person cannot be compared."""
    phrase = _phrase(raw)
    tokens = phrase.split()
    if not tokens or len(tokens) > 6 or tokens[0] in PRONOUNS:
        return None
    if phrase in FIRST_PERSON or phrase in {"the user", "user"}:
        return "user"
    return phrase


def _canon_attr(attr: str) -> str:
    phrase = _phrase(attr)
    for old, new in sorted(ATTR_SYNONYMS.items(), key=lambda kv: -len(kv[0])):
        phrase = re.sub(rf"\b{re.escape(old)}\b", new, phrase)
    return phrase


def _attr_functional(attr: str) -> bool:
    return attr in FUNCTIONAL_ATTRS or attr.startswith(FUNCTIONAL_ATTR_PREFIXES)


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def _strip_negation(sentence: str) -> tuple[str, bool]:
    out = sentence
    for pattern, repl in _NEGATIONS:
        out = re.sub(pattern, repl, out)
    out = re.sub(r"\s+", " ", out).strip()
    if out == sentence:
        return sentence, True
    # "does not live in" -> "lives in": restore the third person the verb tables use
    out = re.sub(r"\b(live|work|reside|own|like|play|love|use)\b", lambda m: m.group(1) + "s", out)
    out = re.sub(r"\bhave\b", "has", out)
    return out, False


_CONJUGATE = {"am": "is", "have": "has", "was": "was", "do": "does"}
_CONTRACTIONS = {"i'm": "i am", "i've": "i have"}
_CONTRACTED = re.compile(r"^(i'm|i've)\b")


def _first_person(sentence: str, speaker: str = "user") -> str:
    """`i live in paris` -> `user lives in paris`: the user (or the `speaker` who said it) is a subject
    like any other. A contraction is read as its words ("i'm" as "i am"), and a verb with an
    apostrophe ("don't", "can't") is kept as it is: "i don't live in paris" was read as "user dons't
    live in paris", so the most common way to deny a fact gave no triple and closed nothing."""
    sentence = _CONTRACTED.sub(lambda m: _CONTRACTIONS[m[1]], sentence)
    m = re.match(r"^i ([\w']+)(.*)$", sentence)
    if not m:
        return sentence
    verb = m[1]
    if verb in _CONJUGATE:
        verb = _CONJUGATE[verb]
    elif not verb.endswith(("ed", "s")) and "'" not in verb and verb not in {"no", "never", "do"}:
        verb += "es" if verb.endswith(("sh", "ch", "o", "x")) else "s"
    return f"{speaker} {verb}{m[2]}"


_SPEAKER = re.compile(r"^(?P<who>[^\s:,]+): (?P<said>.+)$")  # one speaker's label; "alice, bob:" names no one


def _resolved(sentence: str) -> str:
    """The sentence with its first person named: `i live in paris` -> `user lives in paris`, and
    `sam: i live in paris` -> `sam lives in paris`, `sam: my flight is at 9am` -> `sam's flight is
    at 9am`. Why the label: a statement the dream lifts out of a turn keeps who said it (`sam: ...`,
    summarise.attributed), and read as a subject the label gave "sam: I live in Paris" no triple and
    "sam: My flight is at 7am" the subject "sam my flight", so a dream fact was never superseded
    when that person said it changed."""
    m = _SPEAKER.match(sentence)
    if m is None:
        return _first_person(_where_clause(sentence))
    who, said = m["who"], _where_clause(m["said"])
    return f"{who}'s {said[3:]}" if said.startswith("my ") else _first_person(said, who)


def _where_clause(sentence: str) -> str:
    """`paris is where alice lives` -> `alice lives in paris` (`at` for work)."""
    m = re.match(r"^(?P<o>.+?) is where (?P<rest>.+)$", sentence)
    if not m:
        return sentence
    return f"{m['rest']} {'at' if m['rest'].endswith('works') else 'in'} {m['o']}"


def _clean(text: str) -> str | None:
    text = re.sub(r"\s+", " ", text.strip().lower().replace("\u2019", "'"))
    text = text.rstrip(".!;")
    if not text or re.search(r"[.!?;]\s", text) or "?" in text:
        return None  # several sentences or a question: not a simple fact
    return text


def extract_triple(text: str) -> Triple | None:
    """The (subject, relation, object) of a simple fact sentence, or None when it is not one."""
    sentence = _clean(text)
    if sentence is None:
        return None
    sentence, polarity = _strip_negation(_resolved(sentence))
    for fn in (_schedule_fact, _verb_fact, _age_fact, _count_fact, _possessive_fact, _location_fact, _copula_fact,
               _generic_fact):
        triple = fn(sentence)
        if triple is not None:
            if not triple.object or triple.subject is None:
                return None
            return Triple(triple.subject, triple.relation, triple.object, polarity, triple.functional)
    return None


def _verb_fact(s: str) -> Triple | None:
    for relation, phrases in VERB_RELATIONS.items():
        for phrase in sorted(phrases, key=len, reverse=True):
            m = re.match(rf"^(?P<s>.+?) {re.escape(phrase)} (?P<o>.+)$", s)
            if m and (subj := _subject(m["s"])):
                return _identifying(subj, relation, m["o"])
    m = re.match(r"^(?P<s>.+?) is (?:the )?(?:wife|husband|spouse) of (?P<o>.+)$", s)
    if m and (subj := _subject(m["s"])):
        return _identifying(subj, "MARRIED_TO", m["o"])
    return None


ORG_NOUNS = frozenset({
    "bakery", "bank", "company", "firm", "startup", "hospital", "clinic", "school", "university", "college",
    "shop", "store", "restaurant", "cafe", "hotel", "agency", "factory", "lab", "laboratory", "library",
    "studio", "newspaper", "charity", "ngo", "council", "ministry", "corporation", "consultancy", "garage",
    "pharmacy", "supermarket", "bar", "pub", "gym", "museum", "theatre", "airline", "publisher"})


def _identifying(subj: str, relation: str, raw_object: str, time_means_when: bool = True) -> Triple:
    """A single-valued relation holds one *particular* value: `lives in London`. An indefinite object
    names a kind (`lives in a flat`, `works for a good cause`) and a time names when (`works at night`,
    `born in June`): both can hold beside the particular value, so they get their own relations. An
    indefinite employer (`works at a small bakery`) is still an employer."""
    obj = _phrase(raw_object)
    if relation.startswith("BORN") and _TIME_OBJECT.match(obj):
        return Triple(subj, "BIRTH_YEAR" if re.fullmatch(r"\d{4}", obj) else "BORN_WHEN", obj, functional=True)
    if time_means_when and _TIME_OBJECT.match(obj):
        return Triple(subj, f"{relation}:WHEN", obj)
    indefinite = re.match(r"^(a|an|some|any)\b", raw_object.strip().lower())
    if indefinite and not (relation == "WORKS_AT" and obj.split()[-1] in ORG_NOUNS):
        return Triple(subj, f"{relation}:KIND", obj)
    return Triple(subj, relation, obj, functional=True)


def _age_fact(s: str) -> Triple | None:
    m = re.match(r"^(?P<s>.+?) (?:is|turned|has turned|is now) (?P<n>\d{1,3}) (?:years old|years of age|yrs old)$", s)
    if m is None:
        m = re.match(r"^(?P<s>.+?) is aged (?P<n>\d{1,3})$", s)
    if m and (subj := _subject(m["s"])):
        return Triple(subj, "AGE", m["n"], functional=True)
    return None


def _count_fact(s: str) -> Triple | None:
    m = re.match(r"^(?P<s>.+?) (?:has|owns|now has) (?P<n>\d+|" + "|".join(_NUMBER_WORDS) + r") (?P<t>[a-z ]+)$", s)
    if m and (subj := _subject(m["s"])):
        n = str(_NUMBER_WORDS.get(m["n"], m["n"]))
        thing = " ".join(_singular(w) for w in _phrase(m["t"]).split())
        return Triple(subj, f"COUNT:{thing}", n, functional=True)
    return None


def _possessive_fact(s: str) -> Triple | None:
    m = re.match(r"^(?P<s>my|.+?'s|.+?s') (?P<a>[a-z0-9 ]+?) (?:is|are|was|is now) (?P<o>.+)$", s)
    if m:
        owner = m["s"]
        subj = "user" if owner == "my" else _subject(re.sub(r"'s?$", "", owner))
    else:
        m = re.match(r"^the (?P<a>[a-z0-9 ]+?) of (?P<s>.+?) (?:is|are|was|is now) (?P<o>.+)$", s)
        subj = _subject(m["s"]) if m else None
    if not m or subj is None:
        return None
    attr = _canon_attr(m["a"])
    if (when := _clock_schedule(m["o"])) is not None:  # `my flight is at 7am`: the flight's time
        return Triple(f"{subj} {attr}", "TIME", when, functional=True)
    if attr in _ATTR_TO_RELATION:
        return _identifying(subj, _ATTR_TO_RELATION[attr], m["o"], time_means_when=False)
    if _attr_functional(attr):
        return _identifying(subj, f"ATTR:{attr}", m["o"], time_means_when=False)
    return Triple(subj, f"ATTR:{attr}", _phrase(m["o"]))


_CLOCK = re.compile(r"^(\d{1,2}(:\d{2})?\s*(am|pm)|\d{1,2}:\d{2}|noon|midnight)$")
_WHEN_JOIN = re.compile(r",?\s+(?:at|on|in)\s+|,\s*")


def _clock_schedule(raw_object: str, preposition: str = "at") -> str | None:
    """`at 7am`, `now at 9am on friday`: the time a thing of someone's is at, or None (`to 9am` with
    the `preposition` "to", where it was moved to).

    Why: "my flight is at 7am" was the attribute `flight` with the object "at 7am", a relation that
    holds many values, so "my flight is now at 9am on friday" stood beside it as a second current fact.
    A schedule is one time (as "the flight is at 9am" is, `_location_fact`). Only a clock time makes
    one, with nothing but times beside it: "on friday" alone may add to "at 7am" rather than replace
    it, and "at gate 12" or "at the main office" is no time at all (a missed update is a duplicate, a
    false supersede a lost fact)."""
    obj = re.sub(r"^(?:now|still)\s+", "", " ".join(raw_object.split()))
    if not obj.startswith(preposition + " "):
        return None
    when = obj[len(preposition) + 1 :]
    pieces = _WHEN_JOIN.split(when)
    if not all(_TIME_OBJECT.match(p) for p in pieces) or not any(_CLOCK.match(p) for p in pieces):
        return None
    return when


# What a plan's time is said with besides "is at" (`_schedule_fact`): a verb of its start ("my flight
# leaves at 7am", "the standup starts at 9:15"), the same time "is at" gives; a verb of its end ("my
# train arrives at 11:30", "the shop closes at 5pm"), another time of it; a move to a new time ("my
# flight got moved to 9am", "the meeting was moved from 3pm to 4pm"), its new start.
_STARTS = r"leaves|departs|takes off|starts|begins|opens|kicks off"
_ENDS = r"arrives|lands|ends|finishes|closes|gets in"
_MOVED = (r"(?:(?:got|was|were|has been|have been|had been|is being|is|'s been)\s+)?(?:moved|rescheduled|pushed back|"
          r"pushed|postponed|delayed|changed|shifted|bumped|brought forward)(?: up| back)?(?: from .+?)?")
_SCHEDULE = re.compile(rf"^(?P<s>(?:my|the|.+?'s) .+?) (?:now |still |instead )?"
                       rf"(?:(?P<start>{_STARTS})|(?P<end>{_ENDS})|(?P<moved>{_MOVED})) (?P<o>.+)$")


def _schedule_fact(s: str) -> Triple | None:
    """`my flight leaves at 7am`, `my flight got moved to 9am`: the time of someone's plan or of a
    thing (`my`, `the`, someone's), single-valued as `my flight is at 7am` is (`_clock_schedule`),
    so a new time supersedes the old one however it is said. A verb of the plan's end gives another
    relation (TIME:END): "lands at 11am" is no new time for "leaves at 7am". Only a clock time
    makes a schedule ("moved to the second floor", "leaves from gate 12" are no time), and a person
    is no plan ("Sam leaves at 7am" today, at 9am tomorrow)."""
    m = _SCHEDULE.match(s)
    if m is None:
        return None
    when = _clock_schedule(m["o"], "to" if m["moved"] else "at")
    if when is None:
        return None
    owner, _, thing = m["s"].partition(" ")
    if owner == "my":
        subj = f"user {_canon_attr(thing)}"
    elif owner == "the":
        subj = _subject(m["s"])
    else:  # someone's: `sam's flight`
        whose, _, thing = m["s"].rpartition("'s ")
        subj = None if (who := _subject(whose)) is None else f"{who} {_canon_attr(thing)}"
    if subj is None:
        return None
    return Triple(subj, "TIME:END" if m["end"] else "TIME", when, functional=True)


def _location_fact(s: str) -> Triple | None:
    """`the keys are in the drawer`: a thing (article or `my`) has one place per preposition.

    The object must carry a determiner (`in the hallway`, not the state `in need of repair`), and the
    preposition stays in the relation (`on a ring` and `in a bowl` can both hold); a time is a schedule.
    """
    m = re.match(r"^(?P<s>(?:the|my) .+?) (?:is|are) (?P<p>in|at|on|inside|under) (?P<o>.+)$", s)
    if not m:
        return None
    subj = "user " + _phrase(m["s"][3:]) if m["s"].startswith("my ") else _subject(m["s"])
    obj = _phrase(m["o"])
    if subj is None:
        return None
    if _TIME_OBJECT.match(obj):
        return Triple(subj, "TIME", obj, functional=True)
    if not re.match(r"^(the|a|an|my|his|her|their|our|your|room|\d)\b", m["o"]):
        return None
    prep = {"inside": "in", "at": "in"}.get(m["p"], m["p"])
    return _identifying(subj, "LOCATED_IN" if prep == "in" else f"LOCATED_{prep.upper()}", m["o"])


def _copula_fact(s: str) -> Triple | None:
    m = re.match(r"^(?P<s>.+?) (?:is|are|was) (?P<o>.+)$", s)
    if not m or not (subj := _subject(m["s"])):
        return None
    obj = m["o"]
    if re.match(r"^(a|an) ", obj):
        return Triple(subj, "IS_A", _phrase(obj))
    return Triple(subj, "IS", _phrase(obj))


def _generic_fact(s: str) -> Triple | None:
    """`alice plays tennis`: the verb is the relation; multi-valued, so it only ever reinforces."""
    m = re.match(r"^(?P<s>[a-z0-9']+(?: [a-z0-9']+)?) (?P<v>[a-z]+(?:s|ed)) (?P<o>.+)$", s)
    if not m or not (subj := _subject(m["s"])):
        return None
    verb = m["v"]
    lemma = verb[:-2] if verb.endswith("ed") else _singular(verb)
    return Triple(subj, f"VERB:{lemma}", _phrase(m["o"]))


def _first_truth(found: list[Term]) -> tuple[Term, ...] | None:
    """The first `(stv ...)` expression among these terms, at any depth, in reading order."""
    for term in found:
        if isinstance(term, tuple):
            if term[:1] == ("stv",):
                return term
            if (inner := _first_truth(list(term))) is not None:
                return inner
    return None


def _symbols(found: list[Term], but: tuple[Term, ...] | None = None) -> list[str]:
    """The symbols of these terms in reading order, the expression `but` left out."""
    return [s for t in found if t is not but for s in (_symbols(list(t), but) if isinstance(t, tuple) else [t])]


def triple_from_atom(atom: str) -> tuple[Triple | None, tuple[float, float] | None]:
    """`(lives_in alice paris) (stv 1 0.9)` or `(--> (x alice paris) lives_in)`: the triple and truth.
    The atom is read as MeTTa by the one s-expression reader, its truth value by the one truth parser
    (`reasoning.atoms.parse_truth`): two numbers in [0, 1] (c may be 1: PLN's revision caps it there,
    and `infer` keeps such conclusions as facts), or the atom is refused (not stored with its truth
    value out of range, nor with none)."""
    try:
        found = [term_of(node) for node in read_all(atom, metta=True)]
    except SexprError as err:
        raise ValueError(f"atom {atom.strip()!r} is malformed: {err}") from None
    truth = None
    if (stv := _first_truth(found)) is not None:
        try:
            truth = parse_truth(stv, certain=True)
        except AtomError:
            raise ValueError(f"atom truth value {render(stv)} must be two numbers in [0, 1]") from None
    flat = _symbols(found, stv)
    if len(flat) == 5 and flat[0] == "-->" and flat[1] in {"x", "×", "*"}:
        subj, obj, rel = flat[2], flat[3], flat[4]
    elif len(flat) == 3 and flat[0] in {"-->", "<->", "==>"}:
        return Triple(_phrase(flat[1].replace("_", " ")), "IS_A", _phrase(flat[2].replace("_", " "))), truth
    elif len(flat) == 3:
        rel, subj, obj = flat
    else:
        return None, truth
    phrase = rel.replace("_", " ").replace("-", " ").lower()
    relation = next((name for name, ps in VERB_RELATIONS.items() for p in ps if p == phrase or p == phrase + "s"),
                    re.sub(r"[^A-Z0-9]+", "_", rel.upper()).strip("_"))
    return (Triple(_phrase(subj.replace("_", " ")), relation, _phrase(obj.replace("_", " ")),
                   functional=relation in FUNCTIONAL_RELATIONS), truth)


def same_object(a: str, b: str) -> bool:
    """Objects agree when equal, or one refines the other (token containment: `berlin` and `berlin
    since 2019`); when both carry numbers they must be the same numbers (`555 1234` vs `555 1234 5`)."""
    if a == b:
        return True
    ta = {t.removesuffix("'s") for t in a.split()}
    tb = {t.removesuffix("'s") for t in b.split()}
    nums_a = {t for t in ta if t.isdigit()}
    nums_b = {t for t in tb if t.isdigit()}
    if nums_a and nums_b and nums_a != nums_b:
        return False
    return bool(ta) and bool(tb) and (ta <= tb or tb <= ta)


def key_tokens(text: str) -> set[str]:
    """Numbers and capitalised names: two texts that differ in these are not the same fact."""
    found = set(re.findall(r"\b\d+(?:[.:]\d+)?\b", text))
    found |= {w.lower() for i, w in enumerate(re.findall(r"\b[\w']+\b", text)) if i > 0 and w[:1].isupper()}
    return found
