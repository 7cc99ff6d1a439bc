"""A message as a channel hands it over: its text, who sent it and on which channel.

Why who and channel travel with the text: an episode is "what whom said where", and recall by person
("what did Maria say about her trip") needs the sender, which a bare string loses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mettaclaw.textutil import at_hex, safe_text

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


BLANKS = re.compile(r"\s+")
SEPARATORS = re.compile(r"[,|()]")
MAX_NAME = 64


def sender_name(who: str) -> str | None:
    """A sender's name as memory keeps it: one line of at most 64 characters in which `,` `|` `(` `)`,
    the trace's and the index's separators, are written as their hex code (`alice|` is `alice@7c.`,
    as scopes write what a scope name cannot hold); None when nothing is left (the anonymous user).
    Why not dropped: `|` is a nick character on IRC, and `alice|` became alice, with her scope."""
    one_line = BLANKS.sub(" ", who).strip()
    return SEPARATORS.sub(lambda m: at_hex(m[0]), one_line)[:MAX_NAME].strip() or None


def shown(messages: list[Message]) -> str:
    """Several messages of one turn, one after another."""
    return "\n".join(m.shown() for m in messages)
