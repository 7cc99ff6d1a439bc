"""What a dream did, precisely: the dream phase is a summariser that must account for every change."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mettaclaw.textutil import atomic_write

ACTIONS = ("added", "reinforced", "merged", "superseded", "pruned")


@dataclass
class DreamReport:
    started_at: float = 0.0
    finished_at: float | None = None
    reason: str = "request"
    summariser: str = "extractive"
    resumed: bool = False  # the previous dream was cut short; this one picked up from its last batch
    episodes: int = 0
    batches: int = 0
    clusters: int = 0
    candidates: int = 0
    added: list[str] = field(default_factory=list)
    reinforced: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)  # ids of the closed (old) versions
    pruned: list[str] = field(default_factory=list)  # pruned under the strength floor, then capped
    themes: list[str] = field(default_factory=list)  # theme records written (also counted in `added`)
    themes_retired: list[str] = field(default_factory=list)  # themes rebuilt away (their episodes stay)
    unchanged: int = 0  # replays of confirmations already counted (a resumed batch)
    patterns_promoted: list[str] = field(default_factory=list)
    patterns_rejected: list[str] = field(default_factory=list)
    statistics_linked: int = 0  # statistics whose graph links were rewritten (dream/quantify.py)
    decayed: int = 0
    edges_pruned: int = 0
    error: str | None = None

    def record(self, result: Any) -> None:
        """Account for one `LearnResult`."""
        if result.duplicate:
            self.unchanged += 1
        elif result.action == "created":
            self.added.append(result.id)
        elif result.action == "reinforced" or (result.action == "merged" and result.similarity is None):
            # a named concept found by its name is confirmed, not rewritten
            self.reinforced.append(result.id)
        elif result.action == "merged":
            self.merged.append(result.id)
        elif result.action == "superseded":
            self.added.append(result.id)
            self.superseded.extend(result.superseded)

    def counts(self) -> dict[str, int]:
        return {a: len(getattr(self, a)) for a in ACTIONS}

    def text(self) -> str:
        took = f" in {self.finished_at - self.started_at:.1f} s" if self.finished_at else ""
        head = "DREAM-FAILED" if self.error else ("DREAM-DONE" if self.finished_at else "DREAM-RUNNING")
        parts = [f"{head}{took}: {self.episodes} episodes, {self.clusters} clusters, {self.candidates} candidates"
                 + (" (resumed an interrupted dream)" if self.resumed else "")]
        parts.append(", ".join(f"{a} {n}" for a, n in self.counts().items()))
        if self.themes or self.themes_retired:
            parts.append(f"themes: {len(self.themes)} written, {len(self.themes_retired)} rebuilt away")
        if self.patterns_promoted:
            parts.append("patterns promoted: " + "; ".join(self.patterns_promoted))
        if self.patterns_rejected:
            parts.append("patterns rejected: " + "; ".join(self.patterns_rejected))
        if self.error:
            parts.append(f"error: {self.error}")
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["counts"] = self.counts()
        return out


MAX_REPORTS_BYTES = 5 * 1024 * 1024  # past this the older half of the reports is dropped


def append_report(path: Path, report: DreamReport) -> None:
    """One JSON line a finished dream (what the inspector lists); the file keeps the newest reports."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(report.to_dict(), default=str) + "\n")
    if path.stat().st_size > MAX_REPORTS_BYTES:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        atomic_write(path, "".join(lines[len(lines) // 2:]))


def read_reports(path: Path) -> list[dict[str, Any]]:
    """The saved reports, oldest first (a torn last line is skipped)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out
