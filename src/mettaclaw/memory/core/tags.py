"""The tag vocabulary every record shares: reserved prefixes, the size rule, and how tags sit in a
row's metadata (Chroma holds no lists, so they are one `|`-joined value plus a boolean key each).
"""

from __future__ import annotations

from typing import Any, cast

PRIOR_TIME = "knowledge_prior"
WHO_TAG = "who:"  # an episode's tag per sender: `who:Maria`
MAX_TAG_CHARS = 100  # a tag names a topic, a person or a project; a longer one is a text given as a tag
RECORD_TAG = "sem:"  # a tag naming one semantic record (its copy in the index: mirror.py)


def check_tags(tags: Any) -> list[str]:
    """A caller's tags as a list, refused (ValueError naming the limit) when one is longer than
    MAX_TAG_CHARS: every tag is kept in each row's metadata, the filter index's sets, the semantic
    store's tag table and every listing of tags, so a tag of a megabyte was a megabyte in all of them."""
    tags = [tags] if isinstance(tags, str) else list(tags or ())
    for tag in tags:
        if len(str(tag)) > MAX_TAG_CHARS:
            raise ValueError(f"tag {str(tag)[:40]!r}... is {len(str(tag)):,} characters; a tag holds at most "
                             f"{MAX_TAG_CHARS} characters (a word or a short name: keep the text as the memory)")
    return cast(list[str], tags)


def row_tags(meta: dict[str, Any]) -> tuple[str, ...]:
    """A row's tags from its metadata, where they are one `|`-joined value (Chroma holds no lists)."""
    return tuple(t for t in str(meta.get("tags", "")).split("|") if t)


def tag_keys(tags: Any) -> list[str]:
    """One boolean metadata key per tag: Chroma metadata holds no lists, but `{"tag:x": True}` filters.
    Not for a tag that names one record: Chroma 1.5 keeps every metadata key it has seen in the
    collection's schema, for good, so one key per mirrored record grew it without end (15k such keys:
    a 50-row write 2.4 times slower, opening the store 5 times); FilterIndex finds those rows."""
    return [f"tag:{t}" for t in tags if not str(t).startswith(RECORD_TAG)]
