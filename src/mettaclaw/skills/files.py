"""read-file / write-file / append-file, confined to a workspace folder.

Paths are resolved with symlinks followed before the check, so `..`, absolute paths and links that
point outside are all refused unless the user configured `allowOutsideWorkspace`.
"""

from __future__ import annotations

from pathlib import Path

from mettaclaw.skills import SkillError
from mettaclaw.textutil import cap_head


class Workspace:
    def __init__(self, root: Path, allow_outside: bool = False, max_output: int = 20_000) -> None:
        self.root = Path(root).expanduser().resolve()
        self.allow_outside = allow_outside
        self.max_output = max_output

    def resolve(self, name: str) -> Path:
        name = name.strip()
        if not name:
            raise SkillError("no file name given")
        if "\x00" in name:
            raise SkillError("file name contains a NUL byte")
        self.root.mkdir(parents=True, exist_ok=True)
        path = (self.root / Path(name).expanduser()).resolve()
        if not self.allow_outside and not path.is_relative_to(self.root):
            raise SkillError(f"path {name!r} is outside the workspace {str(self.root)!r}; refused")
        return path

    def read(self, name: str) -> str:
        path = self.resolve(name)
        if not path.is_file():
            raise SkillError(f"no such file {name!r} in the workspace")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise SkillError(f"{name!r} is not UTF-8 text") from None
        return cap_head(text, self.max_output, "file")

    def write(self, name: str, text: str, append: bool = False) -> str:
        path = self.resolve(name)
        if path.is_dir():
            raise SkillError(f"{name!r} is a folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a" if append else "w", encoding="utf-8") as fh:
            fh.write(text if not append or text.endswith("\n") else text + "\n")
        return "APPEND-FILE-SUCCESS" if append else "WRITE-FILE-SUCCESS"
