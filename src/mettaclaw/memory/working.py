"""Working memory: the pinned text shown under PINNED in every prompt until replaced or cleared.

Kept in a file under the memory folder (atomic replace) so a restart does not forget the agent's
current task.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from mettaclaw.memory.core import scopes
from mettaclaw.textutil import atomic_write, cap_head, read_head

log = logging.getLogger(__name__)

MAX_CHARS = 5_000  # it is in every prompt: a task and its next steps, not a document (`remember` or `write-file` keep those)


class WorkingMemory:
    """The agent's own pin in `pins.txt`; on a shared channel each person's in `pins/<scope>.txt`: a
    pin made while answering alice ("alice: pay the deposit, ref 4417") is alice's business, and the
    prompt of bob's turn shows bob's pin, not hers."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._texts: dict[str, str] = {}

    def file_of(self, scope: str) -> Path:
        """Where the pin of `scope` is kept (an import names the ones a folder holds)."""
        return self.path if scope == scopes.DEFAULT else self.path.parent / "pins" / f"{scopes.check(scope)}.txt"

    def text_of(self, scope: str = scopes.DEFAULT) -> str:
        if scope not in self._texts:
            self._texts[scope] = self._read(self.file_of(scope))
        return self._texts[scope]

    @staticmethod
    def _read(file: Path) -> str:
        """A pin's file as the prompt shows it. Only `pin` is held to MAX_CHARS, so a file written by hand
        is read no further than that and shown cut, with a marker (else a huge pins.txt goes whole into
        every prompt); one that cannot be read (a folder in its place, no permission) is no pin, said
        in the log, rather than stopping every turn's prompt."""
        try:
            raw, more = read_head(file, 4 * MAX_CHARS + 4)  # MAX_CHARS characters at up to 4 bytes each, and a bit
        except FileNotFoundError:
            return ""
        except OSError as err:
            log.error("the pin in %s cannot be read (%s): shown as no pin", file, err.strerror or err)
            return ""
        text = raw.decode("utf-8", errors="replace")
        if more or len(text) > MAX_CHARS:
            log.warning("the pin in %s is longer than %d characters (written by hand?): shown cut", file, MAX_CHARS)
            return cap_head(text[: MAX_CHARS + 1] if more else text, MAX_CHARS, "pin (its file is longer)")
        return text

    def pinned(self) -> dict[str, str]:
        """Every scope's pin that is not empty (an export carries them all)."""
        folder = self.path.parent / "pins"
        named = [n for f in folder.glob("*.txt") if scopes.is_name(n := f.name.removesuffix(".txt"))] if folder.is_dir() else []
        return {s: t for s in [scopes.DEFAULT, *sorted(named)] if (t := self.text_of(s))}

    @property
    def text(self) -> str:
        """The agent's own pin."""
        return self.text_of(scopes.DEFAULT)

    def pin(self, text: str, scope: str = scopes.DEFAULT) -> str:
        """Replace the pin of `scope`; an empty text clears it."""
        file, text = self.file_of(scope), text.strip()
        if text:
            file.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(file, text)
        elif file.exists():
            os.remove(file)
        self._texts[scope] = text
        return "PIN-SUCCESS" if text else "PIN-CLEARED"
