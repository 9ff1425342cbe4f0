"""Replanning: how plan-and-execute runs repair their plans, what stops them, and what it costs."""

from __future__ import annotations

import streamlit as st

from dashboards import replanning_charts as charts
from dashboards.replanning_models import ReplanDetail, ReplanGroup
from dashboards.ui import (
    client,
    empty_state,
    example_links,
    filters_sidebar,
    fmt_pct,
    fmt_usd,
    guard,
    linked_table,
)

EMPTY = (
    "no plan-and-execute runs in this range. Replanning data comes from `PlanAndExecuteAgent` (kernel.plan) "
    "runs traced to this server: call `tracer.setup(endpoint=\"http://<server>:4318/v1/traces\")` before "
    "running the agent, or widen the time range / clear the filters."
)


def _group_rows(groups: list[ReplanGroup], label: str) -> list[dict[str, object]]:
    return [
        {
            label: g.key or "(none)",
            "replans": g.replans,
            "admitted": g.admitted,
            "refused": g.refused,
            "unusable reply": g.unusable,
            "runs": g.runs,
            "replanner calls": g.llm_calls,
            "input tokens": g.input_tokens,
            "output tokens": g.output_tokens,
            "replanner $": g.llm_cost_usd,
            "re-executed $": g.reexecution_cost_usd,
        }
        for g in groups
    ]


def _ids(ids: list[str]) -> str:
    return ", ".join(ids) if ids else "-"


def _detail_rows(replans: list[ReplanDetail]) -> list[dict[str, object]]:
    """One row per replan span: the router's decision, what the replanner got, what changed."""
    return [
        {
            "agent": r.agent,
            "versions": f"v{r.from_version} -> v{r.to_version}" if r.to_version else f"v{r.from_version}",
            "granularity": r.granularity,
            "rule said": r.route_rule,
            "escalated": bool(r.route_escalated),
            "goal-change reset": bool(r.escalation_reset),
            "verdict": r.verdict or "unusable reply",
            "refusal": r.refusal or "",
            "kept": _ids(r.kept),
            "dropped": _ids(r.dropped),
            "added": _ids(r.added),
            "results clean/stale/void": f"{r.variables_clean or 0}/{r.variables_stale or 0}/{r.variables_void or 0}",
            "tool calls since plan": r.tool_calls,
            "lessons": " | ".join(r.lessons),
        }
        for r in replans
    ]


st.title("Replanning")
filters = filters_sidebar()

with guard():
    data = client().replanning(filters)
    if data.plan_runs == 0 and data.exhausted.runs == 0:
        empty_state(EMPTY)
        st.stop()
    cost = data.cost
    row1 = st.columns(4)
    row1[0].metric("Plan-and-execute runs", f"{data.plan_runs:,}")
    row1[1].metric("Runs that replanned", f"{data.runs_with_replans:,}")
    row1[2].metric("Replans", f"{data.replans:,}",
                   help="Replan spans: admitted, refused by a breaker/gate/guard, or an unusable replanner reply.")
    row1[3].metric("Oscillations caught", f"{data.oscillations:,}",
                   help="Replans refused because the new plan repeated an earlier version.")
    row2 = st.columns(4)
    row2[0].metric("replan_exhausted runs", f"{data.exhausted.runs:,}")
    row2[1].metric("Replanner cost", fmt_usd(cost.replan_cost_usd), help=f"{fmt_pct(cost.replan_share)} of the runs' cost")
    row2[2].metric("Re-executed work", fmt_usd(cost.reexecution_cost_usd),
                   help=f"{fmt_pct(cost.reexecution_share)} of the runs' cost: results a global replan discarded")
    row2[3].metric("Runs' total cost", fmt_usd(cost.runs_cost_usd))
    st.caption(
        f"Admitted {data.admitted:,} · refused {data.refused:,} · unusable replies {data.unusable:,} · "
        f"replanner calls {cost.replan_llm_calls:,} ({cost.replan_input_tokens:,} in / "
        f"{cost.replan_output_tokens:,} out tokens) · first planner {fmt_usd(cost.plan_cost_usd)}"
    )

    left, right = st.columns(2)
    left.plotly_chart(charts.granularity_figure(data), key="replan_granularity")
    right.plotly_chart(charts.cause_figure(data), key="replan_cause")
    st.subheader("By granularity")
    linked_table(_group_rows(data.by_granularity, "granularity"), [g.examples for g in data.by_granularity],
                 key="replan_granularity_table")
    st.subheader("By cause")
    linked_table(_group_rows(data.by_cause, "cause"), [g.examples for g in data.by_cause], key="replan_cause_table")

    st.subheader("Breakers and gates")
    left, right = st.columns(2)
    left.plotly_chart(charts.trips_figure(data), key="replan_trips")
    right.plotly_chart(charts.versions_figure(data), key="replan_versions")
    trip_rows = [{"verdict": t.verdict, "trips": t.trips, "runs": t.runs} for t in data.trips]
    trip_examples = [t.examples for t in data.trips]
    if data.exhausted.without_replan_span:
        trip_rows.append({"verdict": charts.NO_SPAN, "trips": data.exhausted.without_replan_span,
                          "runs": data.exhausted.without_replan_span})
        trip_examples.append(data.exhausted.without_replan_span_examples)
    if trip_rows:
        linked_table(trip_rows, trip_examples, key="replan_trips_table")
    else:
        st.caption("No breaker or gate tripped in this range.")
    example_links(data.exhausted.examples, label="replan_exhausted runs")
    example_links(data.oscillation_examples, label="oscillations caught")
    linked_table([{"plan versions": v.versions, "runs": v.runs} for v in data.versions],
                 [v.examples for v in data.versions], key="replan_versions_table")

    st.subheader("Router and replans")
    steps = data.steps
    row3 = st.columns(4)
    row3[0].metric("Escalated replans", f"{sum(r.escalated for r in data.routes):,}",
                   help="Replans the router made heavier than its rule because the same failure came back.")
    row3[1].metric("Goal-change resets", f"{sum(r.escalation_resets for r in data.routes):,}",
                   help="Replans after a goal change cleared the router's escalation memory.")
    row3[2].metric("Steps kept / dropped / added", f"{steps.kept:,} / {steps.dropped:,} / {steps.added:,}",
                   help="Over admitted replans.")
    row3[3].metric("Stale / void results at replans", f"{steps.stale_results:,} / {steps.void_results:,}")
    linked_table(
        [{"rule said": r.rule or "(none)", "granularity used": r.granularity, "replans": r.replans,
          "escalated": r.escalated, "goal-change resets": r.escalation_resets} for r in data.routes],
        [r.examples for r in data.routes],
        key="replan_routes_table",
    )
    if data.recent_replans:
        st.caption("Newest replans: the router's decision, what the replanner was given and what changed.")
        linked_table(_detail_rows(data.recent_replans), [[r.trace_id] for r in data.recent_replans],
                     key="replan_recent_table")

    st.subheader("Cost")
    left, right = st.columns(2)
    left.plotly_chart(charts.cost_split_figure(data), key="replan_cost_split")
    right.plotly_chart(charts.runs_cost_figure(data), key="replan_runs_cost")
    linked_table(
        [
            {
                "agent": r.agent,
                "version": r.version,
                "stop reason": r.stop_reason,
                "plan versions": r.versions,
                "replans": r.replans,
                "replanner $": r.replan_cost_usd,
                "re-executed $": r.reexecution_cost_usd,
                "run $": r.run_cost_usd,
            }
            for r in data.runs
        ],
        [[r.trace_id] for r in data.runs],
        key="replan_runs_table",
    )
    example_links(cost.examples, label="costliest replanning")
