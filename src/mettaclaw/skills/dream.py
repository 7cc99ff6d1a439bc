"""The `dream` skill: start a dream in the background, or ask how the current or last one went.

Its help text is declared once, with the skill, in MeTTa. An error the model caused raises SkillError;
the turn never waits for a dream.
"""

from __future__ import annotations

from typing import Any

from mettaclaw.skills import SkillError
from mettaclaw.textutil import quoted


def dream_skill(dreamer: Any, arg: str = "") -> str:
    word = (arg or "").strip().lower()
    if word in ("", "now", "start"):
        if dreamer.request("skill"):
            dreamer.start()
            return "DREAM-STARTED in the background; `dream status` shows its progress and report"
        return "DREAM-QUEUED: a dream is already running; another will follow it.\n" + dreamer.status()
    if word in ("status", "report", "last"):
        return dreamer.status()
    raise SkillError(f"unknown argument {quoted(arg.strip())}; use `dream`, `dream now` or `dream status`")
