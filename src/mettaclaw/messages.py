"""A message as a channel hands it over: its text, who sent it and on which channel.

Why who and channel travel with the text: an episode is "what whom said where", and recall by person
("what did Maria say about her trip") needs the sender, which a bare string loses.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Message:
    text: str
    who: str | None = None  # None: the one anonymous local user (the terminal)
    channel: str = "terminal"

    def shown(self) -> str:
        """As the model and the trace read it: `who: text`, or the bare text from the local user."""
        return self.text if self.who is None else f"{self.who}: {self.text}"


def shown(messages: list[Message]) -> str:
    """Several messages of one turn, one after another."""
    return "\n".join(m.shown() for m in messages)
