"""Random beliefs that exercise the rules, for the fast/interpreted equivalence test and the benches.

Small vocabularies make premises share terms, so most generated pairs fire some rule; truth values
include 0 and 1 frequencies and zero confidence, so the zero-denominator paths are hit too.
"""

from __future__ import annotations

import random

from .atoms import Belief

ATOMS = ["cat", "dog", "animal", "mammal", "pet", "bird", "tweety", "sam"]
FREQS = [0.0, 0.1, 0.25, 0.5, 0.8, 0.9, 1.0]
CONFS = [0.0, 0.1, 0.45, 0.5, 0.81, 0.9, 0.95]


def _atom(r: random.Random, atoms: list[str]) -> str:
    return r.choice(atoms)


def _term(r: random.Random, atoms: list[str]) -> object:
    x = r.random()
    if x < 0.7:
        return _atom(r, atoms)
    op = r.choice(["×", "{}", "[]", "∩", "∪", "−", "~"])
    if op in ("{}", "[]") and r.random() < 0.5:
        return (op, _atom(r, atoms))
    return (op, _atom(r, atoms), _atom(r, atoms))


def nal_statement(r: random.Random, atoms: list[str] | None = None, depth: int = 0) -> object:
    atoms = atoms or ATOMS
    x = r.random()
    if x < 0.45:
        return ("-->", _term(r, atoms), _term(r, atoms))
    if x < 0.6:
        return ("<->", _term(r, atoms), _term(r, atoms))
    if x < 0.7 or depth > 0:
        return _atom(r, atoms) if depth > 0 and r.random() < 0.5 else ("-->", _atom(r, atoms), _atom(r, atoms))
    if x < 0.85:
        return ("==>", nal_statement(r, atoms, 1), nal_statement(r, atoms, 1))
    op = r.choice(["¬", "∧", "∨"])
    if op == "¬":
        return (op, nal_statement(r, atoms, 1))
    return (op, nal_statement(r, atoms, 1), nal_statement(r, atoms, 1))


def pln_statement(r: random.Random, atoms: list[str] | None = None) -> object:
    atoms = atoms or ATOMS
    x = r.random()
    a, b = _atom(r, atoms), _atom(r, atoms)
    if x < 0.3:
        return ("Inheritance", a, b)
    if x < 0.45:
        return ("Implication", a, b)
    if x < 0.55:
        return ("Similarity", a, b)
    if x < 0.65:
        return ("Member", a, b)
    if x < 0.72:
        return ("Evaluation", a, b)
    if x < 0.8:
        return ("Inheritance", ("Concept", a), ("Concept", b))
    if x < 0.88:
        args = [("Concept", a)] if r.random() < 0.4 else [("Concept", a), ("Concept", b)]
        return ("Evaluation", ("Predicate", "likes"), ("List", *args))
    if x < 0.94:
        return ("Equivalence", a, b)
    return ("Not", a) if r.random() < 0.5 else a


def belief(r: random.Random, stmt: object) -> Belief:
    return Belief(stmt, r.choice(FREQS), r.choice(CONFS))  # type: ignore[arg-type]


def pairs(n: int, logic: str, seed: int = 0) -> list[tuple[Belief, Belief]]:
    """n premise pairs; half the second premises reuse the first one's statement parts."""
    r = random.Random(seed)
    gen = nal_statement if logic == "nal" else pln_statement
    out = []
    for i in range(n):
        small = ATOMS[: 3 + (i % 4)]
        s1 = gen(r, small)
        if r.random() < 0.08:
            s2 = s1
        else:
            shared = sorted(_leaves(s1) & set(ATOMS)) or small
            s2 = gen(r, [*shared, r.choice(small)])
        if r.random() < 0.05:  # a premise with a variable: the general unifier's path
            s1 = _replace_one(r, s1, "$1")
        out.append((belief(r, s1), belief(r, s2)))
    return out


def _leaves(t: object) -> set[str]:
    if isinstance(t, tuple):
        return set().union(*(_leaves(x) for x in t[1:])) if len(t) > 1 else set()
    return {t}  # type: ignore[arg-type]


def _replace_one(r: random.Random, t: object, var: str) -> object:
    atoms = sorted(_leaves(t) & set(ATOMS))
    if not atoms or not isinstance(t, tuple):
        return t
    target = r.choice(atoms)

    def sub(x: object) -> object:
        if isinstance(x, tuple):
            return (x[0], *(sub(y) for y in x[1:]))
        return var if x == target else x

    return sub(t)


def knowledge_base(n: int, seed: int = 0, vocabulary: int = 40) -> list[Belief]:
    """n distinct NAL beliefs over a vocabulary, like facts recalled from memory."""
    r = random.Random(seed)
    words = [f"t{i}" for i in range(vocabulary)]
    seen: set[object] = set()
    out: list[Belief] = []
    while len(out) < n:
        x = r.random()
        a, b = r.choice(words), r.choice(words)
        if a == b:
            continue
        if x < 0.75:
            s: object = ("-->", a, b)
        elif x < 0.9:
            s = ("<->", a, b)
        else:
            s = ("==>", ("-->", a, b), ("-->", b, r.choice(words)))
        if s in seen:
            continue
        seen.add(s)
        out.append(Belief(s, r.choice([0.6, 0.8, 0.9, 1.0]), r.choice([0.5, 0.7, 0.81, 0.9])))  # type: ignore[arg-type]
    return out
