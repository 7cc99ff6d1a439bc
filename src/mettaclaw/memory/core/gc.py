"""Pausing Python's cyclic garbage collector around work that makes many objects and no garbage."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """The cyclic garbage collector paused: reading a snapshot makes a few hundred thousand objects
    and no garbage, yet each batch of new objects set off a collection that walked every object the
    process holds (torch's among them), a large share of a restart at 100k rows (docs/decisions/0003)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
