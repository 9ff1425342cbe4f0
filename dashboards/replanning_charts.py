"""Pure functions from `/api/replanning` data to plotly figures (the Replanning page).

Kept apart from dashboards/charts.py so the page's charts can be read and tested on their own; the
same rules hold: no Streamlit here, and empty input gives a figure that says "no data", never raises.
"""

from __future__ import annotations

import plotly.graph_objects as go

from dashboards.charts import ERROR_COLOR, LEGEND_TOP, OK_COLOR, _empty
from dashboards.replanning_models import ReplanGroup, Replanning

UNUSABLE_COLOR = "#ff7f0e"
# Granularities in order of how much of the plan they throw away.
GRANULARITY_ORDER = ("patch", "tail", "global")
NO_SPAN = "before a replan call"


def _ordered_granularities(groups: list[ReplanGroup]) -> list[ReplanGroup]:
    rank = {g: i for i, g in enumerate(GRANULARITY_ORDER)}
    return sorted(groups, key=lambda g: (rank.get(g.key or "", len(rank)), g.key or ""))


def _outcome_bars(title: str, groups: list[ReplanGroup], empty: str) -> go.Figure:
    """Replans per group, stacked by outcome: admitted, refused (breaker/gate/guard), unusable reply."""
    if not groups:
        return _empty(title, empty)
    names = [g.key or "(none)" for g in groups]
    fig = go.Figure(
        [
            go.Bar(x=names, y=[g.admitted for g in groups], name="admitted", marker_color=OK_COLOR),
            go.Bar(x=names, y=[g.refused for g in groups], name="refused", marker_color=ERROR_COLOR),
            go.Bar(x=names, y=[g.unusable for g in groups], name="unusable reply", marker_color=UNUSABLE_COLOR),
        ]
    )
    fig.update_layout(title=title, barmode="stack", yaxis_title="replans", height=320, legend=LEGEND_TOP,
                      xaxis={"type": "category"})
    return fig


def granularity_figure(data: Replanning) -> go.Figure:
    """Replans by granularity (patch, tail, global), stacked by outcome."""
    return _outcome_bars("Replans by granularity", _ordered_granularities(data.by_granularity),
                         "no replans in this range")


def cause_figure(data: Replanning, top: int = 15) -> go.Figure:
    """Replans by cause (the failure's error type), most frequent first, stacked by outcome."""
    return _outcome_bars("Replans by cause", data.by_cause[:top], "no replans in this range")


def trips_figure(data: Replanning) -> go.Figure:
    """Breaker and gate trips per verdict, plus runs whose breaker tripped before any replan call."""
    title = "Breaker and gate trips"
    labels = [t.verdict for t in data.trips]
    values = [t.trips for t in data.trips]
    if data.exhausted.without_replan_span:
        labels.append(NO_SPAN)
        values.append(data.exhausted.without_replan_span)
    if not labels:
        return _empty(title, "no breaker or gate tripped in this range")
    fig = go.Figure(go.Bar(x=values, y=labels, orientation="h", marker_color=ERROR_COLOR))
    fig.update_layout(title=title, xaxis_title="trips", yaxis={"autorange": "reversed", "type": "category"},
                      height=max(240, 36 * len(labels) + 100))
    return fig


def versions_figure(data: Replanning) -> go.Figure:
    """How many plan versions runs went through (1 = never replanned, 0 = no usable first plan)."""
    title = "Plan versions per run"
    rows = sorted(data.versions, key=lambda r: r.versions)
    if not rows:
        return _empty(title, "no plan-and-execute runs in this range")
    fig = go.Figure(go.Bar(x=[str(r.versions) for r in rows], y=[r.runs for r in rows]))
    fig.update_layout(title=title, xaxis={"title": "plan versions", "type": "category"}, yaxis_title="runs",
                      height=320)
    return fig


def cost_split_figure(data: Replanning) -> go.Figure:
    """The runs' total cost split into replanner calls, re-executed work and everything else."""
    title = "Replanning cost vs the runs' total"
    cost = data.cost
    if cost.runs_cost_usd <= 0 and cost.replan_cost_usd <= 0 and cost.reexecution_cost_usd <= 0:
        return _empty(title, "no priced plan-and-execute runs in this range")
    rest = max(0.0, cost.runs_cost_usd - cost.replan_cost_usd - cost.reexecution_cost_usd)
    labels = ["replanner LLM calls", "re-executed work", "everything else"]
    values = [cost.replan_cost_usd, cost.reexecution_cost_usd, rest]
    fig = go.Figure(go.Pie(labels=labels, values=values, hole=0.5, sort=False))
    fig.update_layout(title=title, height=320)
    return fig


def runs_cost_figure(data: Replanning, top: int = 20) -> go.Figure:
    """Per run (costliest replanning first): replan calls and re-execution next to the rest of its cost."""
    title = "Runs with the costliest replanning"
    rows = data.runs[:top]
    if not rows:
        return _empty(title, "no run replanned in this range")
    names = [f"{r.agent or '?'} {r.trace_id[:8]}" for r in rows]
    rest = [max(0.0, (r.run_cost_usd or 0.0) - r.replan_cost_usd - r.reexecution_cost_usd) for r in rows]
    fig = go.Figure(
        [
            go.Bar(y=names, x=[r.replan_cost_usd for r in rows], name="replanner calls", orientation="h"),
            go.Bar(y=names, x=[r.reexecution_cost_usd for r in rows], name="re-executed work", orientation="h"),
            go.Bar(y=names, x=rest, name="rest of the run", orientation="h"),
        ]
    )
    fig.update_layout(title=title, barmode="stack", xaxis_title="USD", height=max(240, 30 * len(rows) + 100),
                      yaxis={"autorange": "reversed", "type": "category"}, legend=LEGEND_TOP)
    return fig
