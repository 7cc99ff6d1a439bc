"""Every memory tier, behind one entry point: `open_memory(config) -> Memory` (see memory.py).

Nothing heavy is imported here: the embedder, Chroma and scikit-learn load when memory is opened.
"""

from .memory import Memory, open_memory

__all__ = ["Memory", "open_memory"]
