"""Every error memory raises about its stores, in one place: callers catch these without importing a backend.

`ValueError` and `LookupError` stay what the caller's own input caused; these say the disk, another
process, the server or the model files are in the way, each with a message the user can act on.
"""

from __future__ import annotations

from mettaclaw.config import ConfigError


class MemoryStoreError(RuntimeError):
    """Memory cannot be used as it stands on this machine now; the message says why and what to do."""


class EmbedderMismatch(ConfigError):
    """The store was made by another embedder (or dimension); mixing vectors would corrupt recall. A
    configuration error: the fix is the setting (embeddingprovider) or another memoryDir."""


class StoreLocked(MemoryStoreError):
    """Another process (or another open store in this one) holds the embedded memory folder."""


class StoreUnavailable(MemoryStoreError):
    """The Chroma server could not be reached."""


class StoreDamaged(MemoryStoreError):
    """A store's file on disk is not a readable database (a disk error, a copy cut short, a hand edit).
    Not repaired behind the user's back: moving it aside starts it empty, and what it alone held is lost."""


class AgentLocked(MemoryStoreError):
    """Another process holds the memory folder."""


class ServerUnavailable(MemoryStoreError):
    """The memory server did not answer (down, wrong URL, wrong token)."""


class EmbedderLoadError(MemoryStoreError):
    """The embedder's model could not be loaded; every `embed` raises this with the original cause."""


class ServerRefused(ValueError):
    """The memory server refused a call for what it was asked (another scope's record, a turn past its
    request limit); the message is the server's reason."""
