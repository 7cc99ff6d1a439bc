"""The dream phase (docs/memory.md, "The dream phase"): experience -> knowledge, in the background.

    dreamer = Dreamer(semantic, trace, embedder, config.memory_path("dream", "state.json"), llm=None)
    dreamer.attach(trace); dreamer.start()      # every_n episodes / interval_s / the `dream` skill

Nothing heavy is imported here (scikit-learn loads on the first clustering).
"""

from __future__ import annotations

from .consolidate import Policy
from .episodes import DreamEpisode, ListSource, TraceSource, from_trace
from .report import DreamReport
from .runner import Dreamer
from .summarise import CandidateFact, ExtractiveSummariser, LLMSummariser

__all__ = ["CandidateFact", "DreamEpisode", "DreamReport", "Dreamer", "ExtractiveSummariser",
           "LLMSummariser", "ListSource", "Policy", "TraceSource", "from_trace"]
