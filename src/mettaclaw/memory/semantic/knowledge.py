"""The KNOWLEDGE block: a few current facts put in the prompt so the agent need not remember to ask.

Lines are whole facts (name, kind, confidence, top relations); the block stops at the first line that
would cross the budget, so the model never sees half a fact. A lone first line that is too long is
shortened with a visible marker rather than dropped.
"""

from __future__ import annotations

from mettaclaw.memory.core import scopes

from .records import RecallResult, SemanticRecord
from .store import SemanticStore

HEADER = "KNOWLEDGE (current facts relevant to the new message; c = confidence):"
TOP_RELATIONS = 2


def _relations(store: SemanticStore, rec: SemanticRecord) -> str:
    edges = sorted((e for e in store.edges_of(rec.id) if e.dst_layer == "semantic" and e.src_layer == "semantic"),
                   key=lambda e: -e.weight)[:TOP_RELATIONS]
    parts = []
    for edge in edges:
        other = store.get(edge.other(rec.id))
        if other is None or scopes.of_tags(other.tags) != scopes.of_tags(rec.tags):
            continue  # a link into another scope (a Hebbian one, say) never shows that scope's records
        label = other.name or other.content[:40]
        parts.append(f"{edge.type} {label}" if edge.src == rec.id else f"{label} {edge.type} this")
    return "; ".join(parts)


def render_line(store: SemanticStore, rec: SemanticRecord) -> str:
    head = f"{rec.name}: " if rec.name and rec.name_norm not in rec.content.lower() else ""
    rels = _relations(store, rec)
    return f"- [{rec.kind} c={rec.confidence:.2f}] {head}{rec.content}" + (f" | {rels}" if rels else "")


def render_names(records: list[SemanticRecord]) -> list[str]:
    """The cheapest level: what the message names, and how much was seen of it."""
    return [f"- {rec.name or rec.content[:60]} [{rec.kind}] ({len(rec.source_episodes)} episodes)" for rec in records]


def render_knowledge(store: SemanticStore, hits: list[RecallResult], budget_chars: int) -> str:
    return render_knowledge_lines([render_line(store, hit.record) for hit in hits if hit.record is not None], budget_chars)


def render_knowledge_lines(lines_in: list[str], budget_chars: int) -> str:
    lines = [HEADER]
    used = len(HEADER)
    for line in lines_in:
        if used + 1 + len(line) > budget_chars:
            room = budget_chars - used - 1
            if len(lines) == 1 and room >= 40:
                lines.append(line[: room - 1] + "…")
            break
        lines.append(line)
        used += 1 + len(line)
    return "\n".join(lines) if len(lines) > 1 else ""
