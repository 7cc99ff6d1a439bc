"""Scopes: whose a record is (a user, an agent, a project), so one memory can serve several people
without one ever being shown another's records.

A record outside the agent's own scope carries the reserved tag `scope:<name>` (index rows and
semantic records alike), so every existing filter path (the index's tag sets, Chroma `where`, the
semantic stores' tag clauses) filters by scope with no second mechanism; a record without one is the
agent's (`agent`), which is also what every memory written before scopes existed is. Readers say which
scopes they may see; the set always names them explicitly, there is no "all" but the agent's own
process reading with `None` (every scope: the agent itself, export, forget).

Episodes get their scope from who said them (`of_episode`): on a shared channel (IRC) each person's
messages are theirs (`user:<nick>`); anywhere else (the terminal, an embedding program's queue) there
is one owner, and what is said is the agent's own.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from typing import Any

from mettaclaw.textutil import at_hex

DEFAULT = "agent"
PREFIX = "scope:"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.:#@-]{0,63}$")
SHARED_CHANNELS = ("irc:",)  # channels where several people talk to the agent, each in their own scope


def check(scope: str) -> str:
    """A scope name as stored (lower case); ValueError naming the rule for anything else."""
    name = (scope or "").strip().lower()
    if not _NAME.match(name):
        raise ValueError(f"scope {scope!r} is not a name of 1-64 characters from a-z 0-9 _ . : # @ - "
                         "(for example user:alice, project:garden)")
    return name


def is_name(text: str) -> bool:
    """Whether `text` is a scope name as stored (what `check` returns)."""
    return bool(_NAME.match(text))


def tag(scope: str) -> str | None:
    """The tag a record of `scope` carries (None for the agent's own scope, which is untagged)."""
    name = check(scope)
    return None if name == DEFAULT else PREFIX + name


def with_scope(tags: Iterable[str], scope: str) -> list[str]:
    """`tags` (a writer's: checked free of scope tags and of any past filters.MAX_TAG_CHARS) plus the
    scope's own."""
    from .tags import check_tags  # (filters imports this module)

    tags = check_tags(tags)
    refuse_scope_tags(tags)
    own = tag(scope)
    return tags + ([own] if own else [])


def refuse_scope_tags(tags: Iterable[str]) -> None:
    """A caller may not set a scope by tagging: scopes are given by who writes, never by the text."""
    bad = [t for t in tags if str(t).strip().lower().startswith(PREFIX)]
    if bad:
        raise ValueError(f"tags starting with {PREFIX!r} are reserved for scopes: {', '.join(bad)}")


def of_tags(tags: Iterable[str]) -> str:
    """The scope of a record with these tags."""
    return next((t[len(PREFIX):] for t in tags if t.startswith(PREFIX)), DEFAULT)


def user_tags(tags: Iterable[str]) -> list[str]:
    """Tags without the scope tag (what is shown)."""
    return [t for t in tags if not t.startswith(PREFIX)]


def allows(scopes: frozenset[str] | None, tags: Iterable[str]) -> bool:
    return scopes is None or of_tags(tags) in scopes


def may_read(visible: frozenset[str] | None, episode: Any) -> bool:
    """Whether a reader of the `visible` scopes (None: all) may read this trace record (None: none)."""
    return episode is not None and (visible is None or of_episode(episode.who, episode.channel) in visible)


def readable_by(visible: frozenset[str] | None) -> Callable[[tuple[str, ...], str], bool] | None:
    """`may_read` as a test of a record's senders and channel (what the trace's tail filters by); None
    when a reader sees every scope."""
    if visible is None:
        return None
    return lambda who, channel: of_episode(who, channel) in visible


def of_episode(who: Iterable[str], channel: str) -> str:
    """Whose an episode is: on a shared channel the one sender's (`user:<nick>`), or the channel's when
    several people spoke in one turn; anywhere else the agent's."""
    if not channel.startswith(SHARED_CHANNELS):
        return DEFAULT
    people = [w for w in dict.fromkeys(who) if w]
    if len(people) == 1:
        return _derived(f"user:{people[0]}")
    return _derived(f"channel:{channel.removeprefix('irc:')}")


def _derived(name: str) -> str:
    """A scope named after a nick or a channel, one per name: a character a scope may not hold (and
    `@`, which no IRC nick holds) is written `@<utf-8 hex>.`, so `alice[` and `alice_` stay apart
    (both were `alice_`, and one read the other's memory); a name left too long ends in a digest."""
    safe = re.sub(r"[^a-z0-9_.:#-]", lambda m: at_hex(m[0]), name.lower())
    if len(safe) > 64:
        safe = safe[:47] + "@" + hashlib.sha256(safe.encode("utf-8")).hexdigest()[:16]
    return check(safe)


def reading(scope: str, with_agent: bool = True) -> frozenset[str]:
    """What a writer in `scope` may read: its own scope, and (for the agent serving someone) the
    agent's own, where its knowledge priors and its own work live."""
    own = check(scope)
    return frozenset({own, DEFAULT}) if with_agent else frozenset({own})
