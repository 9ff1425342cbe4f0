"""Agent graph: the agents, tools and models of the filtered runs and who calls whom (handoffs,
sub-agents, agents as tools), with calls, error rate, p95 latency and cost per edge; clicking a node
or an edge lists its example traces, and the edge table links one per row."""

from __future__ import annotations

import streamlit as st

from dashboards.graph_view import show_graph
from dashboards.saved_views import views_sidebar
from dashboards.ui import client, empty_state, filters_sidebar, guard, param, set_param

RUN_LIMITS = (100, 500, 2000, 5000)

st.title("Agent graph")
filters = filters_sidebar()
views_sidebar("graph")
try:
    wanted = int(param("max_runs", "500"))
except ValueError:
    wanted = 500
max_runs = st.select_slider("Runs to build it from (the newest)", RUN_LIMITS,
                            value=wanted if wanted in RUN_LIMITS else 500)  # fmt: skip
set_param("max_runs", None if max_runs == 500 else str(max_runs))

with guard():
    graph = client().graph(filters, max_runs=max_runs)
    if not graph.runs:
        empty_state()
        st.stop()
    st.caption(f"built from the newest {graph.runs:,} of {graph.runs_matched:,} matching runs · "
               f"{len(graph.nodes)} nodes · {len(graph.edges)} edges")
    show_graph(graph, key="graph")
