"""Runs: the filtered, sorted, paged list of runs; selecting a run opens its trace."""

from __future__ import annotations

import streamlit as st

from dashboards.ui import (
    DEFAULT_MODE,
    TRACE_PAGE,
    client,
    empty_state,
    filters_sidebar,
    guard,
    param,
    set_param,
    trace_url,
)
from tracer import conventions as c

SORTS = ("start_time", "duration_ms", "cost_usd", "steps", "input_tokens")
STATUSES = ("all", "ok", "failed")
STOP_REASONS = ("", *[r.value for r in c.StopReason])
PAGE_SIZE = 50


def _choice(name: str, options: tuple[str, ...], default: str) -> int:
    value = param(name, default)
    return options.index(value) if value in options else options.index(default)


st.title("Runs")
filters = filters_sidebar()
cols = st.columns([1, 2, 2, 2, 1])
status = cols[0].selectbox("Status", STATUSES, index=_choice("status", STATUSES, "all"))
stop_reason = cols[1].selectbox("Stop reason", STOP_REASONS, index=_choice("stop_reason", STOP_REASONS, ""),
                                format_func=lambda v: v or "any")
q = cols[2].text_input("Search name / agent", value=param("q"))
sort = cols[3].selectbox("Sort by", SORTS, index=_choice("sort", SORTS, "start_time"))
order = cols[4].selectbox("Order", ("desc", "asc"), index=_choice("order", ("desc", "asc"), "desc"))
for name, value, default in (("status", status, "all"), ("stop_reason", stop_reason, ""), ("q", q, ""),
                             ("sort", sort, "start_time"), ("order", order, "desc")):
    set_param(name, None if value == default else value)

# Keyset paging: a stack of cursors, reset whenever the query changes.
signature = (filters, status, stop_reason, q, sort, order)
if st.session_state.get("runs_signature") != signature:
    st.session_state["runs_signature"] = signature
    st.session_state["runs_cursors"] = [None]
cursors: list[str | None] = st.session_state["runs_cursors"]

with guard():
    page = client().runs(
        filters, ok={"all": None, "ok": True, "failed": False}[status], stop_reason=stop_reason or None,
        q=q.strip() or None, sort=sort, order=order, limit=PAGE_SIZE, cursor=cursors[-1],
    )
    if not page.runs and len(cursors) == 1:
        empty_state()
        st.stop()
    rows = [
        {
            "start": r.start_time,
            "agent": r.agent,
            "version": r.version,
            "project": r.project,
            "mode": r.mode or DEFAULT_MODE,
            "ok": r.ok,
            "stop reason": r.stop_reason,
            "steps": r.steps,
            "LLM calls": r.llm_calls,
            "tool errors": r.tool_errors,
            "tokens in": r.input_tokens,
            "tokens out": r.output_tokens,
            "cost $": r.cost_usd,
            "duration ms": r.duration_ms,
            "scores": r.scores_text or None,
            "trace": trace_url(r.trace_id),
        }
        for r in page.runs
    ]
    event = st.dataframe(
        rows, key="runs_table", hide_index=True, on_select="rerun", selection_mode="single-row",
        column_config={"trace": st.column_config.LinkColumn("trace", display_text="open trace")},
    )
    selected = getattr(getattr(event, "selection", None), "rows", None) or []
    if selected:
        st.switch_page(TRACE_PAGE, query_params={"trace_id": page.runs[selected[0]].trace_id})
    nav = st.columns([1, 1, 4])
    if len(cursors) > 1 and nav[0].button("Previous page", icon=":material/chevron_left:"):
        cursors.pop()
        st.rerun()
    if page.next and nav[1].button("Next page", icon=":material/chevron_right:"):
        cursors.append(page.next)
        st.rerun()
    nav[2].caption(f"page {len(cursors)} · {len(page.runs)} runs · select a row to open its trace")
