"""read-file / write-file / append-file, confined to a workspace folder.

Paths are resolved with symlinks followed before the check, so `..`, absolute paths and links that
point outside are all refused unless the user configured `allowOutsideWorkspace`.
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path

from mettaclaw.skills import SkillError
from mettaclaw.skills.registry import Skill, SkillRegistry
from mettaclaw.textutil import cap_head

MAX_PATH, MAX_DEPTH = 1024, 64  # deeper or longer names only ever come from a mistake or an attack


class Workspace:
    def __init__(self, root: Path, allow_outside: bool = False, max_output: int = 20_000) -> None:
        self.root = Path(root).expanduser().resolve()
        self.allow_outside = allow_outside
        self.max_output = max_output

    def ensure(self) -> Path:
        """The workspace folder, made if missing: what the file skills and `shell` work in."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as err:  # workspaceDir names a file, or a place that cannot be written
            raise SkillError(f"the workspace {str(self.root)!r} cannot be used: {err.strerror or err}") from None
        return self.root

    def resolve(self, name: str) -> Path:
        name = name.strip()
        if not name:
            raise SkillError("no file name given")
        if "\x00" in name:
            raise SkillError("file name contains a NUL byte")
        if len(name) > MAX_PATH or len(Path(name).parts) > MAX_DEPTH:
            raise SkillError(f"path is too long ({len(name)} characters, {len(Path(name).parts)} parts; "
                             f"at most {MAX_PATH} and {MAX_DEPTH}); refused")
        self.ensure()
        try:
            path = (self.root / Path(name).expanduser()).resolve()
        except RuntimeError as err:  # a symlink loop (the model can make one with `shell`), `~user` of no user
            raise SkillError(f"path {name!r} cannot be resolved: {err}") from None
        if not self.allow_outside and not path.is_relative_to(self.root):
            raise SkillError(f"path {name!r} is outside the workspace {str(self.root)!r}; refused")
        return path

    def read(self, name: str) -> str:
        path = self.resolve(name)
        try:
            _refuse_other_than_a_file(path, name)
            _refuse_a_folder_path(path, name)
            if not path.exists():
                raise SkillError(f"no such file {name!r} in the workspace")
            with open(path, "rb") as fh:  # only what can be shown: reading a huge log whole costs memory and time
                raw = fh.read(self.max_output * 4 + 4)  # max_output characters, at up to 4 bytes each
                size = os.fstat(fh.fileno()).st_size
            whole = len(raw) >= size
            text = codecs.getincrementaldecoder("utf-8")().decode(raw, final=whole)  # a cut character waits
            text = text.replace("\r\n", "\n").replace("\r", "\n")  # line ends as read_text gave them
        except UnicodeDecodeError:
            raise SkillError(f"{name!r} is not UTF-8 text") from None
        except OSError as err:
            raise SkillError(f"cannot read {name!r}: {err.strerror or err}") from None
        if whole:
            return cap_head(text, self.max_output, "file")
        return text[: self.max_output] + f"\n[... file truncated: {size:,} bytes in all, only its start is shown ...]"

    def write(self, name: str, text: str, append: bool = False) -> str:
        path = self.resolve(name)
        try:
            _refuse_other_than_a_file(path, name)
            _refuse_a_folder_path(path, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a" if append else "w", encoding="utf-8") as fh:
                fh.write(text if not append or text.endswith("\n") else text + "\n")
        except OSError as err:
            raise SkillError(f"cannot write {name!r}: {err.strerror or err}") from None
        return "APPEND-FILE-SUCCESS" if append else "WRITE-FILE-SUCCESS"


def _refuse_other_than_a_file(path: Path, name: str) -> None:
    """A folder or a pipe, socket or device is said to be one, for reading and writing alike: opening a
    FIFO (`shell mkfifo`) to write waited forever for a reader, and read-file called a folder or a pipe
    'no such file', so the model went looking for a file that was there."""
    if path.is_dir():
        raise SkillError(f"{name!r} is a folder, not a file")
    if path.exists() and not path.is_file():
        raise SkillError(f"{name!r} is not a regular file (a pipe, socket or device)")


def _refuse_a_folder_path(path: Path, name: str) -> None:
    """A name ending in `/` (or in `/.` or `/..`) is a folder path, whatever is there: resolving drops
    the slash, so `write-file sub/ text` made a file named `sub` and `read-file sub/` read it."""
    stripped = name.strip()
    last = stripped.rsplit("/", 1)[-1]
    if not (stripped.endswith("/") or last in (".", "..")):
        return
    why = f"{name!r} is a folder path (it ends in {'/' if stripped.endswith('/') else last!r})"
    if path.is_file():
        raise SkillError(f"{why}, but {path.name!r} is a file: name the file without the slash")
    example = f", e.g. {stripped + 'notes.txt'!r}" if stripped.endswith("/") else ""
    raise SkillError(f"{why}, not a file: name a file in it{example}")


def register_skills(registry: SkillRegistry) -> None:
    """read-file, write-file, append-file: files of the agent's workspace folder."""
    registry.add(Skill("read-file", "PATH", "read a text file from the workspace", "file-read",
                       lambda host: host.workspace.read, source=__name__))
    registry.add(Skill("write-file", "PATH TEXT", "write TEXT to a file in the workspace (replacing it)", "file-write",
                       lambda host: host.workspace.write, source=__name__))
    registry.add(Skill("append-file", "PATH TEXT", "append TEXT to a file in the workspace (created if missing)",
                       "file-append", lambda host: lambda path, text: host.workspace.write(path, text, append=True),
                       source=__name__))
