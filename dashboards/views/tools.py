"""Tools: per-tool calls, errors, latency, truncation and cost (direct, decision, carry)."""

from __future__ import annotations

import streamlit as st

from dashboards import charts
from dashboards.ui import client, empty_state, filters_sidebar, guard, linked_table

st.title("Tools")
filters = filters_sidebar()

with guard():
    data = client().tools(filters)
    if not data.tools:
        empty_state("no tool calls in this range: run `steplens demo` (its agents call tools) or widen the range")
        st.stop()
    st.caption(
        "Cost per tool has three parts: **direct** (the tool's own price per call), **decision** (the LLM call "
        "that chose it) and **carry** (its observation's tokens re-sent in every later prompt of the run)."
    )
    rows = [
        {
            "tool": t.tool,
            "calls": t.calls,
            "errors": t.errors,
            "error rate": round(100 * t.error_rate, 2),
            "errors by type": ", ".join(f"{k}: {v}" for k, v in sorted(t.errors_by_type.items())),
            "timeouts": t.timeouts,
            "denials": t.denials,
            "p50 ms": t.p50_ms,
            "p95 ms": t.p95_ms,
            "truncated %": round(100 * t.truncation_rate, 2),
            "dropped tokens": t.dropped_tokens,
            "direct $": t.cost.direct,
            "decision $": t.cost.decision,
            "carry $": t.cost.carry,
            "total $": t.cost.total,
        }
        for t in data.tools
    ]
    linked_table(rows, [t.examples for t in data.tools], key="tools_table")
    left, right = st.columns(2)
    left.plotly_chart(charts.tool_cost_figure(data), key="tool_cost")
    right.plotly_chart(charts.tool_latency_figure(data), key="tool_latency")
