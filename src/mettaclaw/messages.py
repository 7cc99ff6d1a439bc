"""A message as a channel hands it over: its text, who sent it and on which channel.

Why who and channel travel with the text: an episode is "what whom said where", and recall by person
("what did Maria say about her trip") needs the sender, which a bare string loses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mettaclaw.textutil import safe_text

ANONYMOUS = "user"  # who the one anonymous local user (the terminal) is in the trace, its tags and logs


@dataclass(frozen=True)
class Message:
    text: str
    who: str | None = None  # None: the one anonymous local user (ANONYMOUS)
    channel: str = "terminal"

    def __post_init__(self) -> None:
        """Whatever a channel hands over is made safe here, where it enters (textutil.safe_text)."""
        source = f"channel {self.channel}"
        object.__setattr__(self, "text", safe_text(self.text, source))
        if self.who is not None:
            object.__setattr__(self, "who", sender_name(safe_text(self.who, source)))

    def shown(self) -> str:
        """As the model and the trace read it: `who: text`, or the bare text from the local user."""
        return self.text if self.who is None else f"{self.who}: {self.text}"


NOT_IN_NAMES = re.compile(r"[\s,|()]+")
MAX_NAME = 64


def sender_name(who: str) -> str | None:
    """A sender's name as memory keeps it: one line of at most 64 characters without `,` `|` `(` `)`,
    which the trace and the index use as separators (None when nothing is left: the anonymous user)."""
    return NOT_IN_NAMES.sub(" ", who).strip()[:MAX_NAME].strip() or None


def shown(messages: list[Message]) -> str:
    """Several messages of one turn, one after another."""
    return "\n".join(m.shown() for m in messages)
