"""The agent graph on a page: the figure, what a click on a node or an edge selected with its example
traces, and the table of every edge (each row links its example trace), shared by the Graph page and
the Trace page."""

from __future__ import annotations

import streamlit as st

from dashboards.graph_chart import graph_figure, picked
from dashboards.sessions_models import Graph
from dashboards.text import inert
from dashboards.ui import example_links, fmt_ms, fmt_pct, fmt_usd, linked_table


def show_graph(graph: Graph, key: str, height: int = 520) -> None:
    if not graph.nodes:
        st.info("no agents, tools or model calls in these runs", icon=":material/info:")
        return
    fig = graph_figure(graph, height)
    event = st.plotly_chart(fig, key=f"{key}_chart", on_select="rerun", selection_mode="points", width="stretch")
    names = {n.id: n.name for n in graph.nodes}
    pick = picked(graph, fig, getattr(event, "selection", None) if event is not None else None)
    if pick is not None and pick.kind == "edge":
        edge = graph.edges[pick.index]
        st.markdown(f"**{inert(names.get(edge.source))} → {inert(names.get(edge.target))}**: {edge.calls} calls, "
                    f"{edge.errors} errors")
        example_links(edge.example_traces, label="example traces of this call")
    elif pick is not None:
        node = graph.nodes[pick.index]
        into = [e for e in graph.edges if e.target == node.id]
        traces = list(dict.fromkeys(t for e in into for t in e.example_traces))[:5]
        st.markdown(f"**{inert(node.name)}** ({inert(node.kind)}): called {node.calls} times, {node.errors} errors")
        example_links(traces, label="example traces calling it")
    else:
        st.caption("Click a node or an edge's midpoint to list its example traces.")
    rows = [
        {"caller": names.get(e.source, e.source), "callee": names.get(e.target, e.target),
         "kind": e.target.split(":", 1)[0], "calls": e.calls, "errors": e.errors,
         "error rate": fmt_pct(e.error_rate), "p50": fmt_ms(e.p50_ms), "p95": fmt_ms(e.p95_ms),
         "cost": fmt_usd(e.cost_usd), "tokens in": e.input_tokens, "runs": e.runs}
        for e in graph.edges
    ]  # fmt: skip
    linked_table(rows, [e.example_traces for e in graph.edges], key=f"{key}_edges")
