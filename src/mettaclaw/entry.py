"""What each command-line entry point (`run.py`, `python -m mettaclaw.mcp`, `python -m mettaclaw.memory`)
does before its own work, in one place so the three cannot drift apart: an offline environment, the
configuration or a one-line refusal, and a log file in the memory folder.

Nothing heavy is imported here: `offline()` must run before the embedder's libraries are imported.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

OFFLINE = {
    "HF_HUB_OFFLINE": "1",  # the embedder ships in a package; never reach for a hub
    "ANONYMIZED_TELEMETRY": "False",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # no weight-loading bars in the agent's terminal
    "TRANSFORMERS_VERBOSITY": "error",
}


def offline() -> None:
    """Set what keeps the model libraries offline and quiet (a value the user set is kept)."""
    for key, value in OFFLINE.items():
        os.environ.setdefault(key, value)


def load(args: Sequence[str]) -> Any:
    """The configuration from `key=value` arguments, or None after printing why it was refused."""
    from mettaclaw.config import ConfigError, load_config

    try:
        return load_config(args)
    except ConfigError as err:
        print(f"config error: {err}", file=sys.stderr)
        return None


USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@]*@")


class Redacting(logging.Formatter):
    """Log lines with the user:password of any URL in them shown as `***`: httpx logs each request's
    URL, so a base_url of `http://user:secret@proxy/v1` put the password into agent.log at every call."""

    def format(self, record: logging.LogRecord) -> str:
        return USERINFO.sub(r"\1***@", super().format(record))


def log_to(config: Any, filename: str) -> Path | None:
    """Create the memory folder and send this process's log to `filename` in it; the folder, or None
    after printing why it cannot be used (a file of that name, a place that cannot be written)."""
    folder = config.memory_path()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(folder / filename, encoding="utf-8")
    except OSError as err:
        unusable(folder, err)
        return None
    handler.setFormatter(Redacting("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(handlers=[handler], level=logging.INFO)
    return folder


def unusable(folder: Path, err: OSError) -> None:
    """Say in one line why the memory folder cannot be used (a file of that name, a place that cannot
    be written), where a traceback would have said it."""
    print(f"error: memoryDir {str(folder)!r} cannot be used: {err.strerror or err}", file=sys.stderr)


def open_memory(config: Any, **kwargs: Any) -> Any:
    """The memory the config names (memory.open_memory), or None after printing why it could not be
    opened: the folder in use, a store or memory server that does not answer, another embedder's
    store, a Chroma collection of another folder, a store's file damaged on disk. Each is the user's
    to fix, so a sentence, not a traceback."""
    from mettaclaw.config import ConfigError
    from mettaclaw.memory import MemoryStoreError
    from mettaclaw.memory import open_memory as open_it

    try:
        memory = open_it(config, **kwargs)
    except (ConfigError, MemoryStoreError) as err:
        print(f"error: {err}", file=sys.stderr)
        return None
    except KeyboardInterrupt:  # Ctrl-C while a long prior was embedded: what was written is kept (priors.BATCH)
        if kwargs.get("importing") is not None:
            raise  # an import takes away all it wrote, priors included, and says so itself
        print("\nstopped while opening the memory; the knowledge priors indexed so far are kept, the rest "
              "are indexed at the next start", file=sys.stderr)
        return None
    except OSError as err:  # a part of the folder read-only (a copy, a mount), the disk full: the file and why
        where = f" ({err.filename})" if err.filename else ""
        print(f"error: the memory in {str(config.memory_path())!r} cannot be opened: {err.strerror or err}{where}",
              file=sys.stderr)
        return None
    for notice in getattr(getattr(memory, "index", None), "notices", ()):  # the log file alone is not read at start
        print(f"warning: {notice}", file=sys.stderr)
    return memory


def stdout_gone() -> None:
    """Point standard output at /dev/null once it can no longer be written (its reader gone, a full
    disk), so the interpreter's own flush at exit does not fail a second time with a traceback."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
