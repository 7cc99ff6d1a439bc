"""The picture of the graph around one record: its typed, weighted links two steps out, laid out and
drawn by networkx (matplotlib renders it to SVG), nodes coloured by layer, edges labelled by type and
as thick as their weight."""

from __future__ import annotations

import io
import threading
import warnings
from collections.abc import Callable
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: render to a file
import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402

MAX_NODES = 40
LAYER_COLOURS = {"semantic": "#8ecae6", "episodic": "#ffb703", "statistics": "#90be6d"}
_DRAWING = threading.Lock()  # pyplot keeps global state: one picture at a time
# a label in a script the font lacks (Chinese, a NUL byte) is drawn as a box, and matplotlib also
# warns, which Python prints on stderr: the terminal the agent talks on, once for every new character
warnings.filterwarnings("ignore", r"Glyph \d+ [\s\S]* missing from font", UserWarning)


def neighbourhood(edges_of: Callable[[str], list[Any]], root: str, steps: int = 2,
                  max_nodes: int = MAX_NODES) -> nx.MultiDiGraph:
    """The typed edges within `steps` of `root`, strongest first, at most `max_nodes` nodes."""
    graph = nx.MultiDiGraph()
    graph.add_node(root, layer="semantic")
    frontier = [root]
    for _ in range(steps):
        following = []
        for node in frontier:
            for edge in sorted(edges_of(node), key=lambda e: -e.weight):
                other = edge.other(node)
                if other not in graph and graph.number_of_nodes() >= max_nodes:
                    continue
                if other not in graph:
                    following.append(other)
                graph.add_node(edge.src, layer=edge.src_layer)
                graph.add_node(edge.dst, layer=edge.dst_layer)
                if not graph.has_edge(edge.src, edge.dst, key=edge.type):
                    graph.add_edge(edge.src, edge.dst, key=edge.type, type=edge.type, weight=edge.weight)
        frontier = following
    return graph


def draw_svg(graph: nx.MultiDiGraph, root: str, label: Callable[[str], str]) -> str:
    """The graph as an SVG document; `label` names a node (a few words of its text)."""
    with _DRAWING:
        fig, ax = plt.subplots(figsize=(9, 6.5), dpi=80)
        try:
            pos = nx.spring_layout(graph, seed=7, k=1.2 / max(1, graph.number_of_nodes()) ** 0.5)
            colours = [LAYER_COLOURS.get(graph.nodes[n].get("layer", ""), "#cccccc") for n in graph]
            sizes = [900 if n == root else 450 for n in graph]
            nx.draw_networkx_nodes(graph, pos, node_color=colours, node_size=sizes, edgecolors="#333333", ax=ax)
            widths = [0.5 + 3.5 * float(d.get("weight", 0.1)) for _, _, d in graph.edges(data=True)]
            nx.draw_networkx_edges(graph, pos, width=widths, edge_color="#555555", arrows=True, arrowsize=10,
                                   node_size=sizes, ax=ax)
            drawn = nx.draw_networkx_edge_labels(graph, pos, ax=ax, font_size=7,
                                                 edge_labels={(u, v): d["type"] for u, v, d in graph.edges(data=True)})
            names = nx.draw_networkx_labels(graph, pos, labels={n: label(n) for n in graph}, font_size=8, ax=ax)
            for text in (*drawn.values(), *names.values()):
                # a memory's words, drawn as written: matplotlib reads "$...$" as math, so "$5 and $6"
                # came out as formulae and an unknown macro ("$\undefinedmacro$") failed the picture
                text.set_parse_math(False)
            ax.margins(0.2)  # room for the labels of nodes at the edge
            ax.set_axis_off()
            fig.tight_layout()
            out = io.StringIO()
            fig.savefig(out, format="svg")
            return out.getvalue()
        finally:
            plt.close(fig)
