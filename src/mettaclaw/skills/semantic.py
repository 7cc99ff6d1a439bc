"""The semantic-memory skills' reading of the model's text, as plain functions `(mem, arg, scope) -> str`
over semantic memory (`Memory.facts`); `scope` is whose turn it is (scopes.py): writes go there, reads
see it and the agent's own, or only what `visible` names when the caller gives it (a memory server of
one scope sees that scope alone).

They are declared, with their help text, on their MemorySkills methods (skills/memory.py). An error the
model caused (bad argument, unknown record) raises SkillError with the cause; our own bugs raise anything else.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mettaclaw.memory import (
    KINDS,
    MAX_RECALL_LIMIT,
    FactsAPI,
    SemanticRecord,
    epoch_seconds,
    format_time,
    scopes,
)
from mettaclaw.skills import SkillError
from mettaclaw.textutil import quoted

EpisodicSearch = Callable[[str, int], list[tuple[str, str, str]]]  # (query, limit) -> [(time, text, id)]

_TAG = re.compile(r"(?<!\S)(-?)#([\w:./-]+)")
# in brackets too: `relate`'s help writes `[weight=0.5]`, and the model writes what it reads (the weight was
# ignored and the bracketed text taken as part of the second name)
_OPTION = re.compile(r"(?<!\S)\[?(category|kind|weight|episodes|limit)=([^\s\]]*)\]?")
_EXAMPLES = {"category": "category=place", "kind": "kind=concept", "weight": "weight=0.5", "episodes": "episodes=ep-12",
             "limit": "limit=5"}
# the value is one word, or a date, a space and a time with what follows it (fractions of a second, a
# zone): taken whole, so epoch_seconds reads or refuses all of it (a zone or `.5` was left in the query)
_AS_OF = re.compile(r"(?<!\S)as_of=(\d{4}-\d{2}-\d{2} \d{2}:\d{2}\S*|\S*)")
# `=>`, else `->` that is no atom's `-->` (`supersede (--> sam mortal) | ...` was split inside it), else `|`
_SUPERSEDE_SEPARATORS = (re.compile("=>"), re.compile(r"(?<!-)->"), re.compile(r"\|"))
# any case, as `query` reads its layer (`recall Episodic: ...` searched facts for the word "Episodic:")
_MODE = re.compile(r"^(semantic|episodic|hybrid)\s*:\s*|^mode=(semantic|episodic|hybrid)\s+", re.IGNORECASE)


def _visible(scope: str, visible: frozenset[str] | None) -> frozenset[str]:
    """What a skill run in `scope` reads: `visible` when the caller says, else the scope and the agent's own."""
    return scopes.reading(scope) if visible is None else visible


def _options(arg: str) -> tuple[str, dict[str, str], list[str], list[str]]:
    """Split `#tags`, `-#excluded` and `key=value` options off the free text."""
    tags = [t for neg, t in _TAG.findall(arg) if not neg]
    excluded = [t for neg, t in _TAG.findall(arg) if neg]
    found = _OPTION.findall(arg)
    opts = dict(found)
    if empty := [k for k, v in found if not v]:
        # `category= place` kept "category=" and "place" as words of the fact (or the query)
        raise SkillError(f"{empty[0]}= takes its value right after the =, e.g. {_EXAMPLES[empty[0]]}")
    text = _OPTION.sub("", _TAG.sub("", arg))
    return " ".join(text.split()), opts, tags, excluded


def _limit(opts: dict[str, str]) -> int:
    """`limit=N`, checked here since an episodic recall never reaches the semantic layer's own check
    (`limit=0` answered "nothing found"); `limit=abc` gave int()'s own words."""
    raw = opts.get("limit", "10")
    if not re.fullmatch(r"[0-9]{1,9}", raw) or not 1 <= int(raw) <= MAX_RECALL_LIMIT:
        raise SkillError(f"limit= takes a whole number from 1 to {MAX_RECALL_LIMIT}, e.g. limit=5, not {raw[:60]!r}")
    return int(raw)


def _weight(opts: dict[str, str]) -> float | None:
    """`weight=W` as a number (its range, [0, 1], is the relation store's check); `weight=abc` gave
    float()'s own words."""
    if "weight" not in opts:
        return None
    try:
        return float(opts["weight"])
    except ValueError:
        raise SkillError(f"weight= takes a number from 0 to 1, e.g. weight=0.5, not {opts['weight'][:60]!r}") from None


def learn(mem: FactsAPI, arg: str, scope: str = scopes.DEFAULT,
          citable: Callable[[str], bool] | None = None) -> str:
    """`citable(id)`: whether `episodes=` may name that episode (it exists and the speaker may read it);
    a fact citing an episode that is not there is provenance nobody can follow."""
    text, opts, tags, _ = _options(arg or "")
    atom = None
    if " :: " in text:
        text, atom = (p.strip() for p in text.split(" :: ", 1))
    kind, name = opts.get("kind", "fact"), None
    first, _, rest = text.partition(" ")
    if first.lower() in KINDS and rest:
        kind = first.lower()
        name_part, colon, definition = rest.partition(":")
        name, text = (name_part.strip(), definition.strip()) if colon else (None, rest.strip())
    if not text:
        raise SkillError("nothing to learn; give a fact, e.g. learn Alice lives in Paris")
    episodes = [e for e in opts.get("episodes", "").split(",") if e]
    if citable is not None and (unknown := [e for e in episodes if not citable(e)]):
        raise SkillError(f"no episode {', '.join(unknown)[:200]}: episodes= names episodes of the trace (ep-N), "
                         "comma-separated")
    try:
        res = mem.learn(text, name=name, kind=kind, category=opts.get("category"), tags=tags, atom=atom,
                        source_episodes=episodes, scope=scope)
    except (ValueError, LookupError) as err:
        raise SkillError(str(err)) from None
    rec = mem.get(res.id)
    conf = f"confidence {rec.confidence:.2f}" if rec else ""
    if res.action == "superseded":
        return f"LEARN-SUCCESS superseded {', '.join(res.superseded)} with {res.id} ({conf})"
    if rec is not None and not rec.current:
        return f"LEARN-SUCCESS stored {res.id} as a past version (a newer value is current: {rec.superseded_by})"
    return f"LEARN-SUCCESS {res.action} {res.id} ({conf})"


def relate(mem: FactsAPI, arg: str, scope: str = scopes.DEFAULT) -> str:
    text, opts, _, _ = _options(arg or "")
    if "|" in text:
        parts = [p.strip() for p in text.split("|")]
        if len(parts) != 3:
            raise SkillError("use `relate a | RELATION | b` or `relate a RELATION b`")
        a, rel, b = parts
        if not a or not b:  # was "nothing to learn: the content is empty", the words of a new concept's learn
            raise SkillError("relate needs a name or id on each side, e.g. relate coffee mug | IS_A | container")
    else:
        tokens = text.split()
        known = mem.relation_types()
        caps = [i for i, t in enumerate(tokens) if re.fullmatch(r"[A-Z][A-Z0-9_]+", t) and 0 < i < len(tokens) - 1]
        pick = next((i for i in caps if tokens[i] in known), caps[0] if caps else None)
        if pick is None:
            raise SkillError("no RELATION in capitals between two names, e.g. relate coffee mug IS_A container")
        a, rel, b = " ".join(tokens[:pick]), tokens[pick], " ".join(tokens[pick + 1 :])
    weight = _weight(opts)
    try:
        is_new = rel.strip() and rel.upper() not in mem.relation_types()
        edge = mem.relate(a, rel, b, weight, scope=scope)
    except (ValueError, LookupError) as err:
        raise SkillError(str(err)) from None
    note = f" (new relation type {edge.type})" if is_new else ""
    return f"RELATE-SUCCESS {a} {edge.type} {b} (weight {edge.weight:.2f}){note}"


def recall(mem: FactsAPI, arg: str, episodic: EpisodicSearch | None = None, scope: str = scopes.DEFAULT,
           visible: frozenset[str] | None = None,
           relevant: Callable[[str, list[SemanticRecord]], set[str]] | None = None) -> str:
    """`recall`: records by meaning (or by filters alone), with `episodic` what was said and done.
    `relevant(query, records)`: the ids among `records` at the relevance floor (RecallPipeline.relevant, the
    one `query` holds its hits to); without it the nearest records are listed, however far."""
    text = (arg or "").strip()
    mode = "semantic"
    m = _MODE.match(text)
    if m:
        mode, text = (m[1] or m[2]).lower(), text[m.end() :]
    as_of = _AS_OF.search(text)
    if as_of and not as_of[1]:  # epoch_seconds reads "" as no time: the recall went on over current facts
        raise SkillError("as_of= takes a time, e.g. as_of=2026-02-28 or as_of=2026-02-28 13:05")
    text = _AS_OF.sub("", text)
    query, opts, tags, excluded = _options(text)
    fact_filters = bool(tags or excluded or "kind" in opts or "category" in opts)
    # filters alone list the facts they pass (`recall kind=concept`, `recall -#draft`); only #tag did
    if not query and (not (fact_filters or as_of) or mode == "episodic"):
        raise SkillError("give a query, e.g. recall where does Alice live" if mode != "episodic" else
                         "`recall episodic:` needs a query, e.g. recall episodic: the trip to Rome")
    if mode != "semantic" and episodic is None:
        raise SkillError(f"{mode} recall is not available here (no episodic memory is connected); use semantic")
    limit = _limit(opts)
    if mode == "episodic" and fact_filters:
        # what was said and done has no kind, category or fact tags: they were ignored, and every
        # episode listed as if it matched them
        raise SkillError("#tags, -#tags, kind= and category= filter facts and concepts; `recall episodic:` takes "
                         "a query, as_of= and limit= (`recall hybrid:` filters its facts and lists episodes too)")
    try:
        lines = []
        if mode in ("semantic", "hybrid"):
            floor = {} if relevant is None else {"relevant": relevant}
            hits = mem.recall(query or None, limit, mode="semantic" if query else "logical", tags_all=tags,
                              tags_none=excluded, kind=opts.get("kind"), category=opts.get("category"),
                              as_of=as_of[1] if as_of else None, visible=_visible(scope, visible), **floor)
            for h in hits:
                rec = h.record
                src = f", from {', '.join(rec.source_episodes[:3])}" if rec.source_episodes else ""
                old = "" if rec.current else f", valid until {format_time(rec.valid_to)}"
                # a named record by its name too (`concept Paris: the capital of France` listed only
                # "the capital of France", which names nothing)
                named = f"{rec.name}: " if rec.name and rec.name.strip().lower() != rec.content.strip().lower() else ""
                lines.append(f"[{rec.kind} c={rec.confidence:.2f}] {named}{rec.content} (id {rec.id}{src}{old})")
        if mode in ("episodic", "hybrid") and episodic is not None and query:  # (episodes need one)
            until = epoch_seconds(as_of[1]) if as_of else None  # as of a time: what had happened by then
            eps = [f"[episode {t}] {txt} (id {i})" for t, txt, i in episodic(query, limit)
                   if until is None or ((when := epoch_seconds(t)) is not None and when <= until)]
            lines = eps if mode == "episodic" else _interleave(lines, eps)
    except (ValueError, LookupError) as err:
        raise SkillError(str(err)) from None
    if not lines:
        return f"RECALL: nothing found for {quoted(query) if query else 'those filters'} ({mode})"
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines[:limit], start=1))


def episodic_search(longterm: Any) -> EpisodicSearch:
    """The `episodic` callable for `recall`, backed by long-term memory (`query(text, limit=)` whose hits
    have `time`, `text` and `id`: raw memories and consolidated episodes)."""

    def search(query: str, limit: int) -> list[tuple[str, str, str]]:
        return [(m.time, m.text, m.id) for m in longterm.query(query, limit=limit)]

    return search


def _interleave(a: list[str], b: list[str]) -> list[str]:
    out = []
    for i in range(max(len(a), len(b))):
        out += ([a[i]] if i < len(a) else []) + ([b[i]] if i < len(b) else [])
    return out


def supersede(mem: FactsAPI, arg: str, scope: str = scopes.DEFAULT,
              visible: frozenset[str] | None = None) -> str:
    arg = arg or ""
    for sep in _SUPERSEDE_SEPARATORS:
        if found := sep.search(arg):
            old, new = arg[: found.start()].strip(), arg[found.end() :].strip()
            break
    else:
        raise SkillError("use `supersede <id or name> => <new fact>`")
    if not old or not new:
        raise SkillError("both the old record and the new fact are needed")
    try:
        res = mem.supersede(old, new, visible=_visible(scope, visible), scope=scope)
    except (ValueError, LookupError) as err:
        raise SkillError(str(err)) from None
    return f"SUPERSEDE-SUCCESS {', '.join(res.superseded)} -> {res.id}"


def history(mem: FactsAPI, arg: str, scope: str = scopes.DEFAULT, visible: frozenset[str] | None = None) -> str:
    try:
        versions = mem.history(arg or "", _visible(scope, visible))
    except (ValueError, LookupError) as err:
        raise SkillError(str(err)) from None
    lines = []
    for rec in versions:
        until = "now (current)" if rec.current else format_time(rec.valid_to)
        lines.append(f"{format_time(rec.valid_from)} .. {until}: {rec.content} (id {rec.id}, c={rec.confidence:.2f})")
    return "\n".join(lines)
