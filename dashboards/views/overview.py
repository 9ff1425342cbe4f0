"""Overview: run totals, success rate, stop reasons and trends, the range's scores per agent and
version; auto-refresh for an ops screen."""

from __future__ import annotations

import streamlit as st

from dashboards import charts
from dashboards.budget_models import advice_rows
from dashboards.client import EndpointMissing, Filters
from dashboards.scores_view import overview_rows
from dashboards.ui import (
    client,
    empty_state,
    filters_sidebar,
    fmt_ms,
    fmt_pct,
    fmt_usd,
    guard,
    param,
    set_param,
    trace_url,
)

REFRESH_CHOICES = {"off": 0, "10 s": 10, "30 s": 30, "60 s": 60, "5 min": 300}

st.title("Overview")
filters = filters_sidebar()
with st.sidebar:
    labels = list(REFRESH_CHOICES)
    current = param("refresh", "off")
    choice = st.selectbox(
        "Auto-refresh", labels, index=labels.index(current) if current in labels else 0,
        help="Re-fetch on a timer, for a screen on the wall.",
    )
    set_param("refresh", None if choice == "off" else choice)
interval = REFRESH_CHOICES[choice]


def body(filters: Filters) -> None:
    with guard():
        api = client()
        ov = api.overview(filters)
        if ov.totals.runs == 0:
            empty_state()
            return
        t = ov.totals
        cols = [*st.columns(4), *st.columns(4)]
        cols[0].metric("Runs", f"{t.runs:,}")
        cols[1].metric("Success rate", fmt_pct(t.success_rate))
        cols[2].metric("p50 duration", fmt_ms(t.p50_duration_ms))
        cols[3].metric("p95 duration", fmt_ms(t.p95_duration_ms))
        cols[4].metric("Steps / run", "—" if t.mean_steps is None else f"{t.mean_steps:.1f}")
        cols[5].metric("Tokens in / out", f"{t.input_tokens:,} / {t.output_tokens:,}")
        cols[6].metric("Cost", fmt_usd(t.cost_usd))
        cols[7].metric("Tool calls (errors)", f"{t.tool_calls:,} ({t.tool_errors:,})")
        left, right = st.columns([2, 1])
        left.plotly_chart(charts.runs_over_time_figure(ov), key="runs_over_time")
        right.plotly_chart(charts.stop_reasons_figure(ov), key="stop_reasons")
        st.plotly_chart(charts.cost_over_time_figure(ov), key="cost_over_time")
        if ov.scores:
            st.subheader("Scores")
            st.dataframe(overview_rows(ov.scores), hide_index=True)
        st.subheader("Latest failed runs")
        failed = api.runs(filters, ok=False, limit=10).runs
        if not failed:
            st.success("No failed runs in this range.")
        else:
            st.dataframe(
                [
                    {"start": r.start_time, "agent": r.agent, "version": r.version, "stop reason": r.stop_reason,
                     "steps": r.steps, "cost": r.cost_usd, "trace": trace_url(r.trace_id)}
                    for r in failed
                ],
                hide_index=True,
                column_config={"trace": st.column_config.LinkColumn("trace", display_text="open trace")},
            )
        if any(h.handoff_runs for h in ov.handoffs):
            st.subheader("Hand-offs to a human")
            st.dataframe(
                [{"agent": h.agent, "version": h.version, "runs": h.runs, "handed off": h.handoff_runs,
                  "hand-off rate": fmt_pct(h.handoff_rate),
                  "reasons": ", ".join(f"{r} {n}" for r, n in h.reasons.items())} for h in ov.handoffs],
                hide_index=True,
            )
        try:
            advice = advice_rows(api.budget_advice(filters))
        except EndpointMissing:  # a server older than the panel: the rest of the page still shows
            advice = []
            st.caption("Budget advice needs a newer steplens server (GET /api/budget-advice).")
        if advice:
            st.subheader("Budget advice")
            st.caption("Suggested limit = P95 of what the agent used x 1.5 (steps and tokens rounded up); "
                       "current = the limit its latest run recorded, judged against the runs in range.")
            st.dataframe(advice, hide_index=True)
        until = f" · until {ov.until:%Y-%m-%d %H:%M} UTC" if ov.until else ""
        st.caption(f"time bucket: {max(ov.bucket_seconds // 60, 1)} min{until}")


if interval:
    st.fragment(run_every=interval)(body)(filters)
else:
    body(filters)
