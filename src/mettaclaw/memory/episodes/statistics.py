"""The statistics layer: how each kind of action has ended, counted as it happens, and the
predictions read back from it before the next decision.

An action's kind is its skill, and for `shell` also the program it runs (`shell backup`), so "the
backup fails at night" is about one kind of command, not about every shell call. For each kind and
scope it keeps counts of successes (status 0) and failures by part of the day, the failure statuses
(exit codes), the mean and spread of durations (Welford, so nothing is re-read), and the newest
`MAX_REFERENCES` episodes as evidence. Statistics listen to the trace (every recorded turn counts at
once) and are saved with the trace offset they reached, so after a crash they catch up from there.

A prediction is shown only when there is evidence: at least `MIN_EVIDENCE` observations and a
Wilson bound (90%) on the expected outcome above one half. A condition (the part of the day) is used
only when it differs from the other parts beyond chance (a two-proportion z test), so outcomes that
do not depend on the time never make a time-of-day prediction: that is the randomness gate.

Here a kind is predicted when the context names it; a request rarely names the program it needs
("please back up my photos" runs `sh`), so what was done for earlier requests meaning the same is
counted the same way and passes the same gates (precedents.py), and `render` shows each kind once.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shlex
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.layers import Announcer
from mettaclaw.memory.core.text import terms
from mettaclaw.parser import Command
from mettaclaw.textutil import atomic_write, move_aside

log = logging.getLogger(__name__)

MAX_REFERENCES = 200  # evidence episodes kept a kind, oldest evicted first
MAX_KINDS = 2000  # kinds kept; past it those seen least recently go
MIN_EVIDENCE = 3
Z = 1.645  # 90% one-sided
SAVE_EVERY_S = 5.0
WRAPPERS = frozenset({"sudo", "env", "nice", "time", "exec", "nohup", "timeout"})
MAX_PROGRAM_CHARS = 40  # of a shell command's program in its action kind
INTERPRETERS = frozenset({"sh", "bash", "zsh", "python", "python3", "node", "perl", "ruby"})
PARTS = (("night", 0, 6), ("morning", 6, 12), ("afternoon", 12, 18), ("evening", 18, 24))


def part_of_day(time_text: str) -> str:
    """`night` (00-06), `morning`, `afternoon` or `evening` of a `YYYY-MM-DD HH:MM:SS` time."""
    try:
        hour = int(time_text[11:13])
    except ValueError:
        return "unknown"
    return next((name for name, start, end in PARTS if start <= hour < end), "unknown")


def action_kind(command: Command) -> str:
    """The skill, and for a shell command the program it runs (its file name without extension)."""
    if command.skill != "shell" or not command.args:
        return command.skill
    try:
        words = shlex.split(command.args[0])
    except ValueError:
        words = command.args[0].split()
    words = [w for w in words if "=" not in w.split("/")[0] and w not in WRAPPERS]
    if len(words) > 1 and os.path.basename(words[0]) in INTERPRETERS and not words[1].startswith("-"):
        words = words[1:]  # `bash backup.sh`: the script is the program
    if not words:
        return "shell"
    # cut to MAX_PROGRAM_CHARS: the kind becomes a pattern's `action_type:` tag, its name and a PREDICTIONS
    # line, and a made-up program name can be as long as the model's reply
    program = os.path.basename(words[0]).split(".")[0].lower()[:MAX_PROGRAM_CHARS]
    return f"shell {program}" if program else "shell"


def wilson_lower(k: int, n: int, z: float = Z) -> float:
    """The lower bound of the Wilson interval of a rate k/n: how sure a rate is, given its count."""
    if n <= 0:
        return 0.0
    p = k / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + z * z / n))


def differs(k1: int, n1: int, k2: int, n2: int, z: float = Z) -> bool:
    """Whether two rates differ beyond chance (two-proportion z test)."""
    if min(n1, n2) < MIN_EVIDENCE:
        return False
    pooled = (k1 + k2) / (n1 + n2)
    if pooled in (0.0, 1.0):
        return False
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    return abs(k1 / n1 - k2 / n2) / se >= z


@dataclass
class KindStatistics:
    """One kind of action in one scope."""

    kind: str
    scope: str = scopes.DEFAULT
    n: int = 0
    ok: int = 0
    parts: dict[str, list[int]] = field(default_factory=dict)  # part of day -> [n, ok]
    statuses: dict[str, int] = field(default_factory=dict)  # failure status -> count
    ms_mean: float = 0.0
    ms_m2: float = 0.0
    last: float = 0.0
    references: list[list[Any]] = field(default_factory=list)  # [episode id, time, status, part], newest last

    @property
    def id(self) -> str:
        return f"stat:{self.scope}:{self.kind}"

    @property
    def ms_spread(self) -> float:
        return math.sqrt(self.ms_m2 / (self.n - 1)) if self.n > 1 else 0.0

    def add(self, episode_id: str, time_text: str, status: int, ms: float) -> None:
        part = part_of_day(time_text)
        self.n += 1
        self.ok += status == 0
        counts = self.parts.setdefault(part, [0, 0])
        counts[0] += 1
        counts[1] += status == 0
        if status:
            self.statuses[str(status)] = self.statuses.get(str(status), 0) + 1
        delta = ms - self.ms_mean
        self.ms_mean += delta / self.n
        self.ms_m2 += delta * (ms - self.ms_mean)
        self.last = time.time()
        self.references.append([episode_id, time_text, status, part])
        del self.references[:-MAX_REFERENCES]

    def verbal(self) -> str:
        """The statistic in a sentence: rate with counts, failure statuses, duration."""
        out = [f"{self.kind}: succeeded {self.ok} of {self.n} ({100 * self.ok / max(self.n, 1):.0f}%)"]
        for part, (n, ok) in sorted(self.parts.items()):
            if n and len(self.parts) > 1:
                out.append(f"{part} {ok} of {n}")
        if self.statuses:
            out.append("failures " + ", ".join(f"{_status(s)} x{c}" for s, c in sorted(self.statuses.items(), key=lambda i: -i[1])))
        out.append(f"takes {_seconds(self.ms_mean)} (± {_seconds(self.ms_spread)})")
        return "; ".join(out)

    def prediction(self, part: str) -> Prediction | None:
        """What to expect from this kind now (in `part` of the day), if the evidence says anything."""
        n_part, ok_part = self.parts.get(part, [0, 0])
        rest_n, rest_ok = self.n - n_part, self.ok - ok_part
        conditional = differs(ok_part, n_part, rest_ok, rest_n)
        n, ok = (n_part, ok_part) if conditional else (self.n, self.ok)
        if n < MIN_EVIDENCE:
            return None
        success = ok * 2 >= n
        confidence = wilson_lower(ok if success else n - ok, n)
        if confidence <= 0.5 or (success and self.ok == self.n):
            return None  # no evidence, or nothing to warn about (it always worked)
        cited = [r[0] for r in reversed(self.references) if not conditional or r[3] == part]
        failed = {str(r[2]) for r in self.references if r[2] and (not conditional or r[3] == part)}
        return Prediction(self.kind, "success" if success else "failure", confidence, ok, n,
                          part if conditional else None, (rest_ok, rest_n) if conditional else None,
                          sorted(failed, key=lambda s: -self.statuses.get(s, 0)), cited[:5], self.ms_mean)


@dataclass
class Prediction:
    kind: str
    expected: str  # success | failure
    confidence: float
    ok: int
    n: int
    part: str | None  # the part of the day it is conditioned on (None: all day)
    otherwise: tuple[int, int] | None  # (ok, n) in the other parts, when conditioned
    statuses: list[str]
    episodes: list[str]
    ms: float
    requests: int = 0  # found by meaning (precedents.py): how many earlier requests like this one; 0 when named
    like: str = ""  # the closest of those requests

    def line(self) -> str:
        when = "" if self.part is None else " at night" if self.part == "night" else f" in the {self.part}"
        failed = self.n - self.ok
        counts = f"failed {failed} of {self.n}" if self.expected == "failure" else f"succeeded {self.ok} of {self.n}"
        how = f" ({', '.join(_status(s) for s in self.statuses[:2])})" if self.expected == "failure" and self.statuses else ""
        other = f"; otherwise succeeded {self.otherwise[0]} of {self.otherwise[1]}" if self.otherwise else ""
        asked = f" (run for {self.requests} earlier requests like this one, such as {json.dumps(self.like)})" \
            if self.requests else ""
        return (f"- {self.kind}{when}{asked}: expect {self.expected}{how}: {counts}{other}; "
                f"confidence {self.confidence:.2f}; takes about {_seconds(self.ms)}; episodes {', '.join(self.episodes)}")


def _status(status: str) -> str:
    return {"-1": "error", "124": "timeout"}.get(status, f"exit {status}")


def _seconds(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


class OutcomeStatistics(Announcer):
    """The statistics layer (`name = "statistics"`): one `KindStatistics` a (scope, kind), fed by
    the trace's captures, saved to `path` at most every SAVE_EVERY_S and at close."""

    name = "statistics"

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.mark = -1  # the last trace offset counted
        self.kinds: dict[str, KindStatistics] = {}
        self._saved = 0.0
        self._dirty = False
        self._lock = threading.RLock()  # its own: a prediction never waits for a dream's write to memory
        if self.path.is_file():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self.mark = int(data["mark"])
                self.kinds = {k: KindStatistics(**v) for k, v in data["kinds"].items()}
            except (ValueError, KeyError, TypeError) as err:  # set aside, not written over: what was damaged is kept
                aside = move_aside(self.path)
                log.error("statistics %s unreadable (%s): moved to %s, recounting from the trace", self.path, err, aside)
                self.mark, self.kinds = -1, {}

    # --- feeding
    def observe(self, episode_id: str, episode: Any) -> None:
        """Count one trace record's commands (a trace capture listener; old records without
        outcomes count nothing)."""
        with self._lock:
            self._observe(episode_id, episode)

    def _observe(self, episode_id: str, episode: Any) -> None:
        offset = int(episode_id.removeprefix("ep-"))
        if offset <= self.mark:
            return
        scope = scopes.of_episode(episode.who, episode.channel)
        for command, (status, ms) in zip(episode.commands, episode.outcomes, strict=False):
            kind = action_kind(command)
            stats = self.kinds.get(f"{scope}\t{kind}")
            if stats is None:
                stats = self.kinds[f"{scope}\t{kind}"] = KindStatistics(kind, scope)
                self._cap()
            stats.add(episode_id, episode.time, int(status), float(ms))
        self.mark = offset
        self._dirty = True
        self.announce_capture(episode_id, episode)
        if time.monotonic() - self._saved >= SAVE_EVERY_S:
            self.save()

    def catch_up(self, records: Iterable[Any], trace_end: int | None = None) -> int:
        """Count the trace records after the saved mark (what a crash left uncounted). A mark at or
        beyond `trace_end` (the trace was cut, or restored from an older copy) counted turns that are
        gone, and would pass over every new one written below it: everything is counted again."""
        if trace_end is not None and self.mark >= trace_end:
            log.warning("statistics %s counted the trace up to byte %d, beyond its end (%d): counting it again",
                        self.path, self.mark, trace_end)
            with self._lock:
                self.mark, self.kinds, self._dirty = -1, {}, True
        counted = 0
        for episode in records:
            self.observe(episode.id, episode)
            counted += 1
        return counted

    def _cap(self) -> None:
        if len(self.kinds) > MAX_KINDS:  # a model inventing programs must not grow this without end
            for key in sorted(self.kinds, key=lambda k: self.kinds[k].last)[: len(self.kinds) - MAX_KINDS]:
                del self.kinds[key]

    def save(self) -> None:
        with self._lock:
            if self._dirty:
                atomic_write(self.path, json.dumps({"mark": self.mark, "kinds": {k: asdict(v) for k, v in self.kinds.items()}}))
                self._dirty = False
            self._saved = time.monotonic()

    # --- reading
    def predictions(self, context: str, recent: list[Command], now_text: str,
                    visible: frozenset[str] | None = None, limit: int = 3) -> list[Prediction]:
        """What to expect from the kinds of action the context names (its words: the message, the
        pins) or the last commands used, best evidence first; [] when nothing has evidence."""
        said = set(terms(context))
        recent_kinds = {action_kind(c) for c in recent}
        part = part_of_day(now_text)
        found = []
        with self._lock:
            candidates = list(self.kinds.values())
        for stats in candidates:
            if visible is not None and stats.scope not in visible:
                continue
            named = stats.kind in recent_kinds or bool(set(terms(stats.kind.removeprefix("shell "))) & said)
            if named and (p := stats.prediction(part)) is not None:
                found.append(p)
        return sorted(found, key=lambda p: -p.confidence)[:limit]

    def forget_scope(self, scope: str) -> int:
        gone = [k for k, v in self.kinds.items() if v.scope == scope]
        for k in gone:
            del self.kinds[k]
        self._dirty = True
        return len(gone)

    def forget_episodes(self, episode_ids: set[str]) -> None:
        """Drop forgotten episodes from the evidence (their counts stay: counts show no text)."""
        for stats in self.kinds.values():
            stats.references = [r for r in stats.references if r[0] not in episode_ids]
        self._dirty = True

    # --- the layer protocol (core/layers.MemoryLayer)
    def get(self, record_id: str) -> KindStatistics | None:
        if not record_id.startswith("stat:"):
            return None
        return next((s for s in self.kinds.values() if s.id == record_id), None)

    def most_observed(self, limit: int = 10, *, scope: str | None = None, kind: str = "") -> list[KindStatistics]:
        """The most observed kinds of action, of one scope or of all, whose kind begins with `kind`."""
        found = [s for s in self.kinds.values() if scope in (None, s.scope) and s.kind.startswith(kind)]
        return sorted(found, key=lambda s: -s.n)[:limit]

    def stats(self) -> dict[str, Any]:
        return {"kinds": len(self.kinds), "observations": sum(s.n for s in self.kinds.values()), "mark": self.mark}

    def __len__(self) -> int:
        return len(self.kinds)

    def __iter__(self) -> Iterator[KindStatistics]:
        return iter(list(self.kinds.values()))

    def close(self) -> None:
        self.save()


def render(predictions: list[Prediction]) -> str:
    """The PREDICTIONS block, each kind of action once (the first prediction of it given)."""
    shown: dict[str, Prediction] = {}
    for p in predictions:
        shown.setdefault(p.kind, p)
    if not shown:
        return ""
    return "PREDICTIONS (how such actions ended before; counts are evidence, not certainty):\n" + \
        "\n".join(p.line() for p in shown.values())
