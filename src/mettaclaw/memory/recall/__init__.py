"""Layer 3 of memory: the one recall, which ranks every layer's candidates for a query and shows them,
as a declared list of stages (pipeline.py) over typed candidates (candidates.py); relevance.py says
how close a candidate is and whose words, present.py what is shown."""

from .pipeline import LayerGraph, RecallPipeline
from .present import MAX_HIT_CHARS, Hit, render

__all__ = ["MAX_HIT_CHARS", "Hit", "LayerGraph", "RecallPipeline", "render"]
