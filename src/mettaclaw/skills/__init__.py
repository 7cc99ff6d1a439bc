"""Python sides of the built-in skills; each is declared (with help text) in metta/skills.metta.

The one convention for errors a skill's user caused: raise `SkillError` with the cause. The bridge
turns it into a `SkillFailure` value and `bridges.error_text` is the one place that writes it out,
as `ERROR: <skill>: <cause>`, with the skill name the model used.
"""

from __future__ import annotations

from dataclasses import dataclass


class SkillError(Exception):
    """A skill could not do what the model asked; the message is the cause the model will read."""


@dataclass(frozen=True)
class SkillFailure:
    """A skill's error as a MeTTa value (a Python exception inside hyperon would become an `(Error ...)`
    atom carrying a whole traceback)."""

    cause: str

    def __str__(self) -> str:
        return f"ERROR: {self.cause}"


def skill_error(skill: str, cause: str) -> str:
    """How every skill error reads to the model."""
    return f"ERROR: {skill}: {cause}"
