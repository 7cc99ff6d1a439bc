"""The turn's own skills: `pin` (working memory), `send` (talk to the person) and `search` (the web).

An error the model caused raises SkillError with its cause (bridges.error_text writes it out).
"""

from __future__ import annotations

from mettaclaw.channels import ChannelGone
from mettaclaw.memory import MAX_PIN_CHARS
from mettaclaw.skills import SkillError
from mettaclaw.skills.registry import Skill, SkillHost, SkillRegistry


def pin(host: SkillHost, text: str) -> str:
    """Working memory, refused past its size with the old pin kept: it goes into every prompt."""
    if len(text.strip()) > MAX_PIN_CHARS:
        raise SkillError(f"not pinned: {len(text.strip()):,} characters, at most {MAX_PIN_CHARS:,} (working memory "
                         "is in every prompt); keep the task and its next steps, `remember` or `write-file` the rest")
    try:
        return host.memory.working.pin(text, host.scope)
    except OSError as err:  # a folder where the pin's file goes, a read-only folder
        raise SkillError(f"not pinned: {str(host.memory.working.file_of(host.scope))!r} cannot be written "
                         f"({err.strerror or err}); the old pin stays") from None


def send(host: SkillHost, text: str) -> str:
    """Say `text` on the channel. An empty one is refused, not SENT: a terminal prints a bare `agent> ` and
    an IRC server refuses an empty PRIVMSG, while the model would be told it went."""
    if not text.strip():
        raise SkillError("not sent: the message is empty")
    if text == host.last_sent:
        return "NOT SENT: exact repeat of your last message"
    try:
        note = host.channel.send(text)  # what the channel could not carry (IRC: a long message cut)
    except ChannelGone as err:  # the session is over: the turn is recorded and the agent stops
        host.stop()
        raise SkillError(f"not sent: {err}") from None
    host.last_sent = text
    return f"SENT ({note})" if note else "SENT"


def search(host: SkillHost, query: str) -> str:
    raise SkillError("no web access: this agent runs offline and no search provider is configured")


def register_skills(registry: SkillRegistry) -> None:
    registry.add(Skill("pin", "TEXT", "set working memory to TEXT, shown under PINNED in every prompt until replaced; "
                       "`pin` alone clears it", "pin-set", lambda host: lambda text: pin(host, text), optional=True,
                       source=__name__))
    registry.add(Skill("send", "TEXT", "send TEXT to the user (an exact repeat of your last message is dropped)",
                       "channel-send", lambda host: lambda text: send(host, text), source=__name__))
    registry.add(Skill("search", "QUERY", "search the web (answers an error when there is no web access)",
                       "web-search", lambda host: lambda query: search(host, query), source=__name__))
