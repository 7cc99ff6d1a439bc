"""Channels: where messages come from and replies go. One interface, `receive()` and `send()` (base.py);
the terminal (terminal.py) and IRC (irc.py) implement it, and `make_channel` picks the configured one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .base import KEPT, Channel, ChannelGone, QueueChannel
from .terminal import TerminalChannel, printable

__all__ = ["KEPT", "Channel", "ChannelGone", "QueueChannel", "TerminalChannel", "make_channel", "printable"]


def make_channel(config: Any, env: Mapping[str, str] | None = None) -> QueueChannel:
    """The configured channel: the terminal, or IRC with the owner's secret from the environment."""
    if config.commchannel == "irc":
        from .irc import IRCChannel

        secret = (os.environ if env is None else env).get(config.ircSecretEnv) or None
        return IRCChannel(config.ircHost, config.ircPort, config.ircChannel, config.ircNick, secret)
    return TerminalChannel()
