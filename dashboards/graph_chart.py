"""The agent graph as a plotly figure, laid out with networkx: callers left of what they call.

Why layers and not a force layout: an agent graph is a call hierarchy (agent -> sub-agent -> tool ->
model); placing each node one column right of its nearest top agent (`multipartite_layout` by call
depth) reads like the trace tree and stays put between reloads, where a spring layout moves with
every new node. Edge width grows with calls, edge colour with the error rate; each edge has a
clickable midpoint marker, so selecting a node or an edge names its example traces.

Names come from spans, so every label is HTML-escaped before plotly sees it (plotly renders a
subset of HTML in text and hover labels).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import networkx as nx
import plotly.graph_objects as go

from dashboards.sessions_models import Graph, GraphEdge, GraphNode

KIND_STYLE = {"agent": ("circle", "#4C78A8"), "tool": ("square", "#F58518"), "llm": ("diamond", "#54A24B")}
_OTHER_STYLE = ("circle-open", "#888888")


@dataclass(frozen=True)
class Pick:
    """What a click selected: a node or an edge (index into the graph's lists)."""

    kind: str  # node | edge
    index: int


def _depths(graph: Graph) -> dict[str, int]:
    """Call depth of each node: 0 for top agents (and anything nobody calls), then BFS along edges."""
    g = nx.DiGraph()
    g.add_nodes_from(n.id for n in graph.nodes)
    g.add_edges_from((e.source, e.target) for e in graph.edges)
    roots = [n.id for n in graph.nodes if n.runs > 0] or [n for n in g.nodes if g.in_degree(n) == 0]
    depth = {n: 0 for n in g.nodes}
    if roots:
        lengths = nx.multi_source_dijkstra_path_length(g, roots)
        depth.update({n: int(d) for n, d in lengths.items()})
    return depth


def layout(graph: Graph) -> dict[str, tuple[float, float]]:
    """Node id -> (x, y): one column per call depth, nodes of a column spread vertically."""
    g = nx.DiGraph()
    for node_id, d in _depths(graph).items():
        g.add_node(node_id, layer=d)
    if not g.nodes:
        return {}
    pos = nx.multipartite_layout(g, subset_key="layer", align="vertical")
    return {n: (float(x), float(y)) for n, (x, y) in pos.items()}


def _node_hover(n: GraphNode) -> str:
    rate = "—" if n.error_rate is None else f"{100 * n.error_rate:.1f}%"
    return (f"<b>{html.escape(n.name)}</b> ({html.escape(n.kind)})<br>calls {n.calls} · errors {n.errors} ({rate})"
            f"<br>top agent of {n.runs} runs · in {n.traces} runs")


def _edge_hover(e: GraphEdge, names: dict[str, str]) -> str:
    rate = "—" if e.error_rate is None else f"{100 * e.error_rate:.1f}%"
    p95 = "—" if e.p95_ms is None else f"{e.p95_ms:.0f} ms"
    cost = "—" if e.cost_usd is None else f"${e.cost_usd:,.4f}"
    return (f"{html.escape(names.get(e.source, e.source))} → {html.escape(names.get(e.target, e.target))}"
            f"<br>calls {e.calls} · errors {e.errors} ({rate})<br>p95 {p95} · cost {cost} · in {e.runs} runs")


def graph_figure(graph: Graph, height: int = 520) -> go.Figure:
    """The figure: edge lines, arrows, clickable edge midpoints (trace 1) and nodes (trace 2)."""
    pos = layout(graph)
    names = {n.id: n.name for n in graph.nodes}
    fig = go.Figure()
    most = max((e.calls for e in graph.edges), default=1) or 1
    mid_x, mid_y, mid_text = [], [], []
    for e in graph.edges:
        if e.source not in pos or e.target not in pos:  # (never, for a server's answer: its edges join its nodes)
            continue
        (x0, y0), (x1, y1) = pos[e.source], pos[e.target]
        bad = e.error_rate or 0.0
        colour = f"rgba({int(120 + 135 * bad)}, {int(120 * (1 - bad))}, {int(120 * (1 - bad))}, 0.8)"
        fig.add_trace(go.Scatter(x=[x0, x1], y=[y0, y1], mode="lines", hoverinfo="skip", showlegend=False,
                                 line={"width": 1 + 7 * e.calls / most, "color": colour}))  # fmt: skip
        fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", showarrow=True,
                           arrowhead=3, arrowsize=1.2, arrowwidth=1.5, arrowcolor=colour, standoff=14, text="")
        mid_x.append((x0 + x1) / 2)
        mid_y.append((y0 + y1) / 2)
        mid_text.append(_edge_hover(e, names))
    fig.add_trace(go.Scatter(x=mid_x, y=mid_y, mode="markers", name="calls", hovertext=mid_text, hoverinfo="text",
                             marker={"size": 10, "color": "rgba(80,80,80,0.35)"}, showlegend=False))  # fmt: skip
    xs, ys, labels, hovers, symbols, colours, sizes = [], [], [], [], [], [], []
    for n in graph.nodes:
        x, y = pos.get(n.id, (0.0, 0.0))
        symbol, colour = KIND_STYLE.get(n.kind, _OTHER_STYLE)
        xs.append(x)
        ys.append(y)
        labels.append(html.escape(n.name))
        hovers.append(_node_hover(n))
        symbols.append(symbol)
        colours.append("#E45756" if (n.error_rate or 0) > 0 else colour)
        sizes.append(18 + min(22, n.calls ** 0.5 * 2 + n.runs ** 0.5 * 2))
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers+text", text=labels, textposition="top center",
                             hovertext=hovers, hoverinfo="text", name="nodes", showlegend=False,
                             marker={"symbol": symbols, "color": colours, "size": sizes,
                                     "line": {"width": 1, "color": "#333"}}))  # fmt: skip
    fig.update_layout(height=height, margin={"l": 10, "r": 10, "t": 30, "b": 10}, clickmode="event+select",
                      xaxis={"visible": False}, yaxis={"visible": False}, dragmode="pan",
                      title="agents (blue circles) · tools (orange squares) · models (green diamonds); red: errors")
    return fig


def picked(graph: Graph, fig: go.Figure, selection: object) -> Pick | None:
    """The node or edge a plotly selection event picked (the last point), if any."""
    points = getattr(selection, "points", None) or (selection.get("points") if isinstance(selection, dict) else None)
    if not points:
        return None
    point = points[-1]
    curve = point.get("curve_number") if isinstance(point, dict) else getattr(point, "curve_number", None)
    index = point.get("point_index") if isinstance(point, dict) else getattr(point, "point_index", None)
    if curve is None or index is None:
        return None
    node_curve = len(fig.data) - 1
    if curve == node_curve:
        return Pick("node", int(index)) if index < len(graph.nodes) else None
    if curve == node_curve - 1:
        ids = {n.id for n in graph.nodes}
        drawn = [i for i, e in enumerate(graph.edges) if e.source in ids and e.target in ids]
        return Pick("edge", drawn[int(index)]) if index < len(drawn) else None
    return None
