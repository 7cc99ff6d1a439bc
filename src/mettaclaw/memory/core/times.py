"""The one time model of memory, and its one home.

- A *time* is wall-clock text, `YYYY-MM-DD HH:MM:SS` (`TIME_FORMAT`) in the machine's local zone: what
  the trace, the index's rows and the agent's prompt hold.
- An *instant* is epoch seconds: clocks (`time.time`, a memory's injected `clock`), the semantic
  layer's times, ages and durations. `epoch_seconds` reads a time as the instant it names (local time);
  `format_time` writes an instant as a time.
- A *key* (`time_key`) is a time's ordinal: the text read as UTC, so a stored row's key never depends
  on the zone it was written in. Keys order rows and filter them by a range of times (`ts` in a row's
  metadata and in Chroma); a key is never an instant and is never compared with one: an age is `now`
  minus `epoch_seconds(time)`, not minus the key (off by the zone's offset, hours).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from mettaclaw.textutil import TIME_FORMAT, now_text, quoted

from .tags import PRIOR_TIME

TIME_PREFIX = re.compile(r"^\d{4}(-\d\d(-\d\d( \d\d(:\d\d(:\d\d)?)?)?)?)?$")
_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d")


def time_key(value: str | None, *, end_of_day: bool = False) -> tuple[str, float | None]:
    """("YYYY-MM-DD HH:MM:SS", its key), or (knowledge_prior, None); bad text is refused. The key is the
    text read as UTC: it orders and filters times, and is no instant (`epoch_seconds` is one)."""
    if value is None:
        when = datetime.now().replace(microsecond=0)
    elif value == PRIOR_TIME:
        return PRIOR_TIME, None
    else:
        for fmt in _FORMATS:
            try:
                when = datetime.strptime(str(value).strip(), fmt)
                break
            except ValueError:
                continue
        else:
            raise ValueError(f"bad time {value!r}: use 'YYYY-MM-DD HH:MM:SS', 'YYYY-MM-DD' or {PRIOR_TIME!r}")
        if end_of_day and len(str(value).strip()) == 10:
            when += timedelta(days=1, seconds=-1)
    # Naive times are ordinals here, not instants: UTC only makes the conversion deterministic.
    # isoformat, not strftime: glibc's %Y writes the year 1 as "1", which this function then refuses
    return when.isoformat(sep=" "), when.replace(tzinfo=UTC).timestamp()


def epoch_seconds(value: str | float | int | datetime | None) -> float | None:
    """The instant a time names, in epoch seconds: a text in the trace's format or ISO 8601 (local time
    unless it says its offset), a datetime, or epoch seconds; anything else refused."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a time: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()
    text = str(value).strip()
    for fmt in (TIME_FORMAT, "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.strptime(text, fmt).timestamp()
        except ValueError:
            pass
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise ValueError(f"not a time: {quoted(text)} (use YYYY-MM-DD HH:MM:SS)") from None


def format_time(ts: float | None) -> str:
    """An instant as a time (local wall-clock text); "" for no instant."""
    return "" if ts is None else now_text(ts)


def check_time(time: str) -> str:
    """`time` if every reader of the trace can parse it back (the index at open, the dream, export):
    a real date and time such as YYYY-MM-DD HH:MM:SS; ValueError naming it otherwise.

    Why the trace checks: a record is read for as long as the folder lives, and the index is caught up
    from the trace at open, so one record with an impossible time (2026-02-30) stopped the memory
    folder from opening at all (`bad time` from the index, the dream and export alike)."""
    try:
        canonical = time_key(time)[0]
        time_key(canonical)  # the index keeps the canonical form and reads it again
        epoch_seconds(time)  # the dream's reading of an episode's time
    except (ValueError, OverflowError, TypeError):
        raise ValueError(f"bad time {time!r}: not a real date and time (YYYY-MM-DD HH:MM:SS)") from None
    return time


def is_time_prefix(text: str) -> bool:
    """`2026`, `2026-02` ... `2026-02-28 13:05:09`, each part a real one (not `2026-02-30` or `99:99`)."""
    if not TIME_PREFIX.match(text):
        return False
    try:
        datetime.strptime(text + "2000-01-01 00:00:00"[len(text):], TIME_FORMAT)
    except ValueError:
        return False
    return True
