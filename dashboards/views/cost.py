"""Cost: totals grouped by model, provider, tool, agent, version, project, user, conversation or day."""

from __future__ import annotations

import json

import streamlit as st

from dashboards import charts
from dashboards.client import COST_GROUPS
from dashboards.ui import client, empty_state, filters_sidebar, fmt_usd, guard, linked_table, param, set_param

st.title("Cost")
filters = filters_sidebar()
current = param("by", "model")
group_by = st.selectbox("Group by", COST_GROUPS, index=COST_GROUPS.index(current) if current in COST_GROUPS else 0)
set_param("by", group_by)

with guard():
    api = client()
    report = api.cost(filters, group_by)
    head = st.columns(3)
    head[0].metric("Total cost", fmt_usd(report.total_cost_usd))
    head[1].metric("Groups", f"{len(report.rows):,}")
    head[2].metric("Price table as of", report.price_table.as_of or "—")
    if not report.rows:
        empty_state()
        st.stop()
    st.plotly_chart(charts.cost_figure(report), key="cost_chart")
    rows = [
        {group_by: r.key or "(none)", "runs": r.runs, "LLM calls": r.llm_calls, "input tokens": r.input_tokens,
         "output tokens": r.output_tokens, "cost $": r.cost_usd}
        for r in report.rows
    ]
    linked_table(rows, [r.examples for r in report.rows], key="cost_table")
    dl = st.columns(2)
    dl[0].download_button(
        "Download CSV", api.cost_csv(filters, group_by), file_name=f"steplens-cost-by-{group_by}.csv",
        mime="text/csv", icon=":material/download:",
    )
    dl[1].download_button(
        "Download JSON", json.dumps(report.model_dump(mode="json"), indent=2),
        file_name=f"steplens-cost-by-{group_by}.json", mime="application/json", icon=":material/download:",
    )
