"""Every memory tier behind one entry point, `open_memory(config) -> Memory`, and the one API the rest of
mettaclaw uses: code outside this package imports from here, never from a module inside it.

Inside, the package is layered, each layer importing only those below it (ARCHITECTURE.md; CI checks
it): core/ (text, tags, scopes, times, settings) < stores/ < index/ | semantic/ < episodes/ <
recall/ | dream/ < the facade here (memory, api, facts, forgetting, retention, mirror, transfer, remote,
working). api.py types what callers use: MemoryAPI, LocalMemoryAPI, FactsAPI.
Nothing heavy is imported here: the embedder, Chroma and scikit-learn load when memory is opened.
"""

from mettaclaw.memory.api import FactsAPI, LocalMemoryAPI, MemoryAPI
from mettaclaw.memory.core import scopes
from mettaclaw.memory.core.settings import DEFAULT_SETTINGS, RecallSettings
from mettaclaw.memory.core.tags import MAX_TAG_CHARS
from mettaclaw.memory.core.text import check_query
from mettaclaw.memory.core.times import check_time, epoch_seconds, format_time, is_time_prefix
from mettaclaw.memory.dream.report import read_reports
from mettaclaw.memory.episodes.index import action_id, message_id, offset_of, senders
from mettaclaw.memory.errors import (
    AgentLocked,
    EmbedderLoadError,
    EmbedderMismatch,
    MemoryStoreError,
    ServerRefused,
    ServerUnavailable,
    StoreDamaged,
    StoreLocked,
    StoreUnavailable,
)
from mettaclaw.memory.index.priors import MAX_SECTION, PRIOR_KIND
from mettaclaw.memory.memory import Memory, open_memory
from mettaclaw.memory.recall import MAX_HIT_CHARS, Hit, render
from mettaclaw.memory.remote import RemoteMemory
from mettaclaw.memory.semantic import SemanticMemory, SemanticRecord
from mettaclaw.memory.semantic.reading import MAX_RECALL_LIMIT
from mettaclaw.memory.semantic.records import KINDS, check_kinds
from mettaclaw.memory.semantic.store import RecordFilter
from mettaclaw.memory.working import MAX_CHARS as MAX_PIN_CHARS

__all__ = [
    "DEFAULT_SETTINGS", "KINDS", "MAX_HIT_CHARS", "MAX_PIN_CHARS", "MAX_RECALL_LIMIT", "MAX_SECTION", "MAX_TAG_CHARS",
    "PRIOR_KIND", "AgentLocked", "EmbedderLoadError", "EmbedderMismatch", "FactsAPI", "Hit", "LocalMemoryAPI",
    "Memory", "MemoryAPI", "MemoryStoreError", "RecallSettings", "RecordFilter", "RemoteMemory", "SemanticMemory",
    "SemanticRecord", "ServerRefused", "ServerUnavailable", "StoreDamaged", "StoreLocked", "StoreUnavailable",
    "action_id", "check_kinds", "check_query", "check_time", "epoch_seconds", "format_time", "is_time_prefix",
    "message_id", "offset_of", "open_memory", "read_reports", "render", "scopes", "senders",
]
