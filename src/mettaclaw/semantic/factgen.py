"""Generated fact pairs for measuring contradiction detection (tests and bench share them).

`unrelated_pairs`: two facts about the same subject that are both true at once (a different
relation, or a multi-valued relation with another object, or a near-miss such as "works in" vs "lives
in"); learning the second must not supersede the first. `contradicting_pairs`: the second replaces the
first (a new city, employer, spouse, age, favourite, count), phrased with varied verbs.
"""

from __future__ import annotations

import random

NAMES = ["Alice", "Bob", "Carol", "Dan", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy", "Mallory", "Niaj",
         "Olivia", "Peggy", "Rupert", "Sybil", "Trent", "Uma", "Victor", "Walter", "Xena", "Yusuf", "Zoe",
         "Amara", "Bruno", "Chen", "Dmitri", "Elena", "Farid", "Greta"]
CITIES = ["Paris", "Berlin", "Rome", "Oslo", "Lisbon", "Madrid", "Vienna", "Prague", "Dublin", "Warsaw", "Athens",
          "Helsinki", "Toronto", "Lima", "Nairobi", "Osaka"]
COMPANIES = ["Google", "Acme", "Initech", "Globex", "Umbrella", "Hooli", "Stark Industries", "Wayne Enterprises",
             "the city library", "a small bakery"]
HOBBIES = ["jazz", "tennis", "chess", "hiking", "painting", "opera", "sushi", "poetry", "football", "gardening"]
LANGS = ["French", "German", "Spanish", "Japanese", "Swahili", "Polish", "Greek"]
THINGS = ["colour", "food", "book", "film", "song", "drink", "season", "sport"]
VALUES = {"colour": ["blue", "green", "red"], "food": ["pizza", "ramen", "curry"], "book": ["Dune", "Emma", "Ulysses"],
          "film": ["Alien", "Heat", "Up"], "song": ["Hey Jude", "Yesterday", "Imagine"], "drink": ["tea", "coffee", "juice"],
          "season": ["spring", "autumn", "winter"], "sport": ["rugby", "golf", "cricket"]}
PETS = ["cats", "dogs", "rabbits", "goldfish"]
JOBS = ["doctor", "teacher", "pilot", "nurse", "lawyer", "baker", "chemist"]
TRAITS = ["tall", "friendly", "left-handed", "vegetarian", "allergic to nuts", "very punctual"]


def _facts(rng: random.Random, s: str) -> dict[str, list[str]]:
    """Statements about `s`, grouped by the relation they state (a group may hold several values)."""
    c1, c2 = rng.sample(CITIES, 2)
    h1, h2 = rng.sample(HOBBIES, 2)
    t1, t2 = rng.sample(THINGS, 2)
    l1, l2 = rng.sample(LANGS, 2)
    j1, j2 = rng.sample(JOBS, 2)
    p1, p2 = rng.sample(PETS, 2)
    f1, f2 = rng.sample([n for n in NAMES if n != s], 2)
    return {
        "lives": [f"{s} lives in {c1}"],
        "works": [f"{s} works at {rng.choice(COMPANIES)}"],
        "works_in": [f"{s} works in {c2}"],
        "born": [f"{s} was born in {rng.choice(CITIES)}"],
        "married": [f"{s} is married to {f1}"],
        "age": [f"{s} is {rng.randint(20, 80)} years old"],
        "fav": [f"{s}'s favourite {t1} is {rng.choice(VALUES[t1])}", f"{s}'s favourite {t2} is {rng.choice(VALUES[t2])}"],
        "count": [f"{s} has {rng.randint(2, 5)} {p1}", f"{s} has {rng.randint(2, 5)} {p2}"],
        "likes": [f"{s} likes {h1}", f"{s} likes {h2}"],
        "speaks": [f"{s} speaks {l1}", f"{s} speaks {l2}"],
        "visited": [f"{s} visited {c1}", f"{s} visited {c2}"],
        "is_a": [f"{s} is a {j1}", f"{s} is a {j2}"],
        "trait": [f"{s} is {t}" for t in rng.sample(TRAITS, 2)],
        "friend": [f"{s}'s friend is {f1}", f"{s}'s friend is {f2}"],
        "sibling": [f"{s}'s sister is {f2}", f"{s}'s brother is {f1}"],
        "relative": [f"{s}'s sister lives in {c2}", f"{s}'s brother works at {rng.choice(COMPANIES)}"],
        "past": [f"{s} lived in {c2} as a child", f"{s} used to work at {rng.choice(COMPANIES)}"],
        "phone": [f"{s}'s office phone is 555-{rng.randint(1000, 9999)}"],
        "owns": [f"{s} owns a {rng.choice(['bike', 'car', 'boat'])}", f"{s} owns a {rng.choice(['piano', 'tent', 'drone'])}"],
        "plays": [f"{s} plays {rng.choice(['chess', 'golf', 'the violin'])}", f"{s} plays {rng.choice(['poker', 'rugby', 'the drums'])}"],
    }


OBJECT_FACTS = {
    "report": ["The report is in the top drawer", "The report is on the agenda", "The report is about sales",
               "The report is due on Friday"],
    "meeting": ["The meeting is at 3pm", "The meeting is in room 4", "The meeting is about the budget"],
    "keys": ["The keys are in the blue bowl", "The keys are made of brass", "The keys are on a red ring"],
    "printer": ["The printer is in the hallway", "The printer is out of toner", "The printer is in need of repair"],
}


def unrelated_pairs(seed: int = 7, subjects: int = 30) -> list[tuple[str, str, str]]:
    """(first, second, kind): every ordered pair of compatible statements about one subject."""
    rng = random.Random(seed)
    out: list[tuple[str, str, str]] = []
    for s in NAMES[:subjects]:
        facts = _facts(rng, s)
        groups = list(facts)
        for g in groups:  # same multi-valued relation, another value
            if len(facts[g]) > 1:
                out.append((facts[g][0], facts[g][1], f"same-relation:{g}"))
        for _ in range(12):  # different relations
            g1, g2 = rng.sample(groups, 2)
            out.append((rng.choice(facts[g1]), rng.choice(facts[g2]), f"other-relation:{g1}/{g2}"))
    for thing, facts_of in OBJECT_FACTS.items():  # things: a place, a state, a topic, a date
        out += [(a, b, f"object:{thing}") for a in facts_of for b in facts_of if a != b]
    return out


def contradicting_pairs(seed: int = 11, subjects: int = 30) -> list[tuple[str, str, str]]:
    """(old, new, kind): the new statement changes a single-valued fact of the same subject."""
    rng = random.Random(seed)
    out: list[tuple[str, str, str]] = []
    for s in NAMES[:subjects]:
        c1, c2 = rng.sample(CITIES, 2)
        m1, m2 = rng.sample(COMPANIES, 2)
        f1, f2 = rng.sample([n for n in NAMES if n != s], 2)
        t = rng.choice(THINGS)
        v1, v2 = rng.sample(VALUES[t], 2)
        p = rng.choice(PETS)
        a = rng.randint(20, 70)
        out += [
            (f"{s} lives in {c1}", f"{s} {rng.choice(['lives in', 'moved to', 'now lives in', 'relocated to', 'resides in'])} {c2}", "lives"),
            (f"{s} works at {m1}", f"{s} {rng.choice(['works at', 'now works for', 'is employed by'])} {m2}", "works"),
            (f"{s} is married to {f1}", f"{s} is married to {f2}", "married"),
            (f"{s} is {a} years old", f"{s} is {a + 1} years old", "age"),
            (f"{s}'s favourite {t} is {v1}", f"{s}'s {rng.choice(['favourite', 'favorite'])} {t} is {v2}", "fav"),
            (f"{s} has {a % 4 + 1} {p}", f"{s} has {a % 4 + 2} {p}", "count"),
            (f"{s} lives in {c1}", f"{s} no longer lives in {c1}", "negation"),
        ]
    return out
