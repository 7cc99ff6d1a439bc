"""The dream's durable bookkeeping: how far consolidation and concept extraction got, and the
action/outcome tally. Written atomically (temp file, fsync, rename) after every batch, so after a
crash the next dream starts at the first unfinished batch; replaying a batch is harmless because
every write it makes is idempotent (the same fact with the same episodes is one reinforced record).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from mettaclaw.textutil import atomic_write, move_aside

log = logging.getLogger(__name__)


@dataclass
class DreamState:
    dream_mark: int = -1  # the last episode whose batch finished consolidating
    concept_mark: int = -1  # the last episode whose concepts were extracted
    patterns: dict[str, list[list[Any]]] = field(default_factory=dict)
    pattern_cited: dict[str, int] = field(default_factory=dict)  # episodes each pattern concept cites
    statistics_linked: dict[str, int] = field(default_factory=dict)  # statistic node -> its count when linked
    theme_sentences: dict[str, list[list[Any]]] = field(default_factory=dict)  # themes.collect's window
    theme_pending: list[str] = field(default_factory=list)  # groups whose themes are to be rebuilt
    in_progress: dict[str, Any] | None = None  # set while a dream runs: a leftover means it was cut short
    last_dream: float | None = None
    last_report: dict[str, Any] | None = None
    dreams: int = 0


def load_state(path: Path) -> DreamState:
    """The saved state; a missing file is a fresh start, an unreadable one is moved aside (named in
    the log) and consolidation restarts from the beginning, which repeats work but loses nothing."""
    path = Path(path)
    if not path.exists():
        return DreamState()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        known = DreamState.__dataclass_fields__
        state = DreamState(**{k: v for k, v in data.items() if k in known})
        for name, default in vars(DreamState()).items():  # a mark of "x" failed every dream and the close
            value = getattr(state, name)
            if default is not None and type(value) is not type(default):
                raise TypeError(f"{name} is {type(value).__name__}, not {type(default).__name__}")
        return state
    except (ValueError, TypeError) as err:
        aside = move_aside(path)
        log.error("dream state %s is unreadable (%s); moved to %s, starting over", path, err, aside)
        return DreamState()


def save_state(path: Path, state: DreamState) -> None:
    path = Path(path)
    # a shallow dict and one C-encoded string: `asdict` deep-copies the theme window (20k sentences)
    # and `json.dump` encodes in Python chunks, a cost paid at every batch of a long dream
    atomic_write(path, json.dumps({f.name: getattr(state, f.name) for f in fields(state)}))
    fd = os.open(path.parent, os.O_RDONLY)  # the rename itself survives a power loss
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
