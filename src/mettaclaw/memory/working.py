"""Working memory: the pinned text shown under PINNED in every prompt until replaced or cleared.

Kept in a file under the memory folder (atomic replace) so a restart does not forget the agent's
current task.
"""

from __future__ import annotations

import os
from pathlib import Path

from mettaclaw.textutil import atomic_write

MAX_CHARS = 5_000  # it is in every prompt: a task and its next steps, not a document (`remember` or `write-file` keep those)


class WorkingMemory:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._text = self.path.read_text(encoding="utf-8") if self.path.is_file() else ""

    @property
    def text(self) -> str:
        return self._text

    def pin(self, text: str) -> str:
        """Replace working memory; an empty text clears it."""
        self._text = text.strip()
        if self._text:
            atomic_write(self.path, self._text)
        elif self.path.exists():
            os.remove(self.path)
        return "PIN-SUCCESS" if self._text else "PIN-CLEARED"
