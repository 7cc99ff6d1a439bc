"""The turns a memory server has recorded, by the key their sender gave each one.

Why: an agent whose memory is a server keeps each turn in its outbox until it has the server's answer
(remote.py). When the turn got through but the answer was lost on the way back (a timeout, a dropped
connection, a server stopped just after the write), the agent sends it again; the server then answers
with the ids it gave the first time instead of recording the turn twice.

The keys live in `delivered.jsonl` beside the trace, one synced line per turn, written after the
turn's own trace record: a crash between the two writes can still record a turn twice, but never
loses one. The newest `keep` keys are remembered, far more than an outbox ever holds.

Keys are per scope (the sending server's): servers of two users share one memory, and bob sending
a key alice had used was answered with alice's turn, and his own was dropped. A line without a
scope (written before scopes had keys of their own) is the agent's.

Each key keeps a digest of the turn it came with: a client that gives a key to a second, different
turn (a counter restarted with its process) was answered with the first turn's ids and the second
turn was dropped without a word; it is now refused. A line without a digest (written before) is
answered as before.

A forgotten turn (`forget`, `forget_scope`, retention) leaves no line that identifies what it said:
its digest confirmed a guess at the forgotten text to whoever held the key (send the guess under
that key: answered, or refused as another turn), and the key itself tied the client's own record
of the turn to this one. Its line is rewritten as a digest of its scope and key only, which still
answers the one question the log is for, whether that key was recorded: a retry of it is refused
(`TurnForgotten`) whatever turn it carries, so it is not recorded again (a forgotten turn would
come back from the outbox of the agent that sent it) and the answer tells nothing of the text.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import OrderedDict
from pathlib import Path

from mettaclaw.memory.core import scopes
from mettaclaw.textutil import append_synced, atomic_write

from .index import TurnRecord, offset_of

log = logging.getLogger(__name__)

KEEP = 10_000
FORGOTTEN = ""  # the scope of a forgotten turn's entry, whose name is the digest of its scope and key (no scope is "")


class TurnForgotten(ValueError):
    """A key whose turn was forgotten since it was recorded: not recorded again."""


class DeliveredTurns:
    """(scope, turn key) -> the TurnRecord it was recorded as, persisted; the oldest keys forgotten past `keep`."""

    def __init__(self, path: Path, keep: int = KEEP) -> None:
        if keep < 1:
            raise ValueError(f"keep must be at least 1, not {keep}")
        self.path, self.keep = path, keep
        # a forgotten turn's entry is (FORGOTTEN, key_digest(scope, key)) -> (None, None)
        self._seen: OrderedDict[tuple[str, str], tuple[TurnRecord | None, str | None]] = OrderedDict()
        self._lines = 0
        if path.exists():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():  # a damaged line is skipped
                self._lines += 1
                try:
                    entry = json.loads(line)
                    if "forgotten" in entry:
                        self._remember((FORGOTTEN, str(entry["forgotten"])), None)
                        continue
                    self._remember((str(entry.get("scope", scopes.DEFAULT)), str(entry["key"])),
                                   TurnRecord(str(entry["turn_id"]), list(entry["episode_ids"]),
                                              list(entry.get("message_ids", ()))), entry.get("turn"))
                except (ValueError, KeyError, TypeError, AttributeError):  # a line cut by a crash mid-append
                    log.warning("skipped an unreadable line of %s: %r", path, line[:200])

    def get(self, key: str, scope: str = scopes.DEFAULT, turn: str | None = None) -> TurnRecord | None:
        """What `key`, sent by a sender of `scope`, was recorded as (None: not yet); ValueError when
        `turn` (its digest, `digest`) is not the turn the key first came with, TurnForgotten when the
        turn it was recorded as has been forgotten since."""
        if (FORGOTTEN, key_digest(scope, key)) in self._seen:
            raise TurnForgotten(f"turn key {key!r} named a turn that has been forgotten since it was recorded: "
                                "it is not recorded again")
        if (seen := self._seen.get((scope, key))) is None:
            return None
        record, first = seen
        if turn is not None and first is not None and turn != first:
            raise ValueError(f"turn key {key!r} was given to another turn, recorded as {record.turn_id}: "
                             "a key names one turn; send a new key for a new turn")
        return record

    def add(self, key: str, record: TurnRecord, scope: str = scopes.DEFAULT, turn: str | None = None) -> None:
        """Remember that `key` of `scope` was recorded as `record`, for the turn of digest `turn`
        (synced before this returns)."""
        self._remember((scope, key), record, turn)
        if self._lines >= 2 * self.keep:  # rewrite with the newest keys only, so the file stays small
            self._rewrite()
            return
        append_synced(self.path, self._line((scope, key), record, turn))
        self._lines += 1

    def forget_turns(self, offsets: set[int]) -> int:
        """The keys of turns recorded at these trace offsets (turns just forgotten) keep only a digest
        of their scope and key, in place (so they age out with the keys around them), and the file is
        rewritten without their lines; how many there were."""
        doomed = {k for k, (record, _) in self._seen.items()
                  if record is not None and offset_of(record.turn_id) in offsets}
        if not doomed:
            return 0
        self._seen = OrderedDict(((FORGOTTEN, key_digest(*k)), (None, None)) if k in doomed else (k, v)
                                 for k, v in self._seen.items())
        self._rewrite()
        return len(doomed)

    def _rewrite(self) -> None:
        atomic_write(self.path, "".join(self._line(k, r, t) for k, (r, t) in self._seen.items()))
        self._lines = len(self._seen)

    def _remember(self, key: tuple[str, str], record: TurnRecord | None, turn: str | None = None) -> None:
        self._seen[key] = (record, turn)
        self._seen.move_to_end(key)
        while len(self._seen) > self.keep:
            self._seen.popitem(last=False)

    @staticmethod
    def _line(key: tuple[str, str], record: TurnRecord | None, turn: str | None) -> str:
        scope, name = key
        if record is None:
            return json.dumps({"forgotten": name}) + "\n"
        return json.dumps({"key": name, **({"scope": scope} if scope != scopes.DEFAULT else {}),
                           "turn_id": record.turn_id, "episode_ids": record.episode_ids, "message_ids": record.message_ids,
                           **({"turn": turn} if turn is not None else {})}) + "\n"


def key_digest(scope: str, key: str) -> str:
    """What stands for a forgotten turn's key: a retry of the key is still known, and the file no
    longer names it."""
    return hashlib.sha256(f"{scope}\x1f{key}".encode()).hexdigest()[:32]


def digest(*parts: object) -> str:
    """A short digest of what a turn says (its time, messages, commands, errors), to tell the same
    turn sent again from another turn under the same key."""
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False, default=str).encode("utf-8")).hexdigest()[:32]
