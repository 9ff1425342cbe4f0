"""Pure functions from query API data to plotly figures.

Why pure: pages stay widget glue, and every chart can be tested by calling it with data and
reading the figure's traces, without a browser or a Streamlit runtime. Each function accepts
empty input and returns a figure that says "no data" instead of raising.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboards.models import CostReport, FailureCluster, Failures, Overview, Span, Tools
from dashboards.trace_view import BudgetPoint
from tracer import conventions as c

ERROR_COLOR = "#d62728"
OK_COLOR = "#2ca02c"
# One colour per operation class, so a waterfall reads at a glance (LLM vs tool vs step).
OPERATION_COLORS: dict[str, str] = {
    c.OperationClass.AGENT: "#7f7f7f",
    c.OperationClass.STEP: "#aec7e8",
    c.OperationClass.LLM: "#1f77b4",
    c.OperationClass.TOOL: "#ff7f0e",
    c.OperationClass.TRUNCATE: "#bcbd22",
    c.OperationClass.BUDGET: "#9edae5",
    c.OperationClass.PLAN: "#9467bd",
    c.OperationClass.REPLAN: "#c5b0d5",
    c.OperationClass.RETRIEVAL: "#8c564b",
    c.OperationClass.EMBEDDING: "#e377c2",
    c.OperationClass.OTHER: "#c7c7c7",
}
WATERFALL_MAX_ROWS = 500
# Horizontal legends go above the plot, right-aligned: plotly's default spot for them is below the
# plot, on top of the x tick labels and axis title (dates and "USD" were unreadable).
LEGEND_TOP = {"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "right", "x": 1}


def _empty(title: str, message: str = "no data for this range") -> go.Figure:
    fig = go.Figure()
    fig.update_layout(
        title=title,
        xaxis={"visible": False},
        yaxis={"visible": False},
        annotations=[{"text": message, "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5}],
        height=260,
    )
    return fig


def runs_over_time_figure(overview: Overview) -> go.Figure:
    """Ok and failed runs per bucket (stacked bars) with the success rate on a second axis."""
    title = "Runs over time"
    if not overview.series or overview.totals.runs == 0:
        return _empty(title, "no runs in this range")
    x = [b.start for b in overview.series]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Bar(x=x, y=[b.ok_runs for b in overview.series], name="ok", marker_color=OK_COLOR))
    fig.add_trace(go.Bar(x=x, y=[b.failed_runs for b in overview.series], name="failed", marker_color=ERROR_COLOR))
    rates = [None if b.success_rate is None else 100 * b.success_rate for b in overview.series]
    fig.add_trace(
        go.Scatter(x=x, y=rates, name="success %", mode="lines+markers", connectgaps=False), secondary_y=True
    )
    fig.update_layout(title=title, barmode="stack", height=340, legend=LEGEND_TOP)
    fig.update_yaxes(title_text="runs", secondary_y=False)
    fig.update_yaxes(title_text="success %", range=[0, 105], secondary_y=True)
    return fig


def cost_over_time_figure(overview: Overview) -> go.Figure:
    """Cost per bucket (bars) and input/output tokens (lines, second axis)."""
    title = "Cost and tokens over time"
    if not overview.series or overview.totals.runs == 0:
        return _empty(title, "no runs in this range")
    x = [b.start for b in overview.series]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Bar(x=x, y=[b.cost_usd for b in overview.series], name="cost (USD)"))
    fig.add_trace(go.Scatter(x=x, y=[b.input_tokens for b in overview.series], name="input tokens"), secondary_y=True)
    fig.add_trace(go.Scatter(x=x, y=[b.output_tokens for b in overview.series], name="output tokens"), secondary_y=True)
    fig.update_layout(title=title, height=340, legend=LEGEND_TOP)
    fig.update_yaxes(title_text="USD", secondary_y=False)
    fig.update_yaxes(title_text="tokens", secondary_y=True)
    return fig


def stop_reasons_figure(overview: Overview) -> go.Figure:
    """The stop-reason mix as a horizontal bar per reason, `finish` in green, the rest in red."""
    title = "Stop reasons"
    rows = sorted(overview.stop_reasons, key=lambda r: r.runs)
    if not rows:
        return _empty(title, "no runs in this range")
    labels = [r.stop_reason or "(none)" for r in rows]
    colors = [OK_COLOR if r.stop_reason == c.StopReason.FINISH else ERROR_COLOR for r in rows]
    fig = go.Figure(go.Bar(x=[r.runs for r in rows], y=labels, orientation="h", marker_color=colors))
    fig.update_layout(title=title, height=max(220, 40 * len(rows) + 100), xaxis_title="runs")
    return fig


def waterfall_figure(
    spans: Sequence[Span], offset: int = 0, limit: int = WATERFALL_MAX_ROWS, trace_start: datetime | None = None
) -> go.Figure:
    """A timeline of spans[offset:offset+limit]: one bar per span from its start to its end,
    indented by depth, coloured by operation class, errors in red.

    Times are milliseconds since `trace_start` (default: the earliest span of the whole trace),
    so paging through a 10,000-span trace keeps one time axis.
    """
    title = "Span timeline"
    window = list(spans[offset : offset + max(limit, 0)])
    if not window:
        return _empty(title, "no spans")
    t0 = trace_start or min(s.start_time for s in spans)
    labels, starts, widths, colors, hovers = [], [], [], [], []
    for i, s in enumerate(window, start=offset):
        labels.append(f"{i:>5} {'· ' * min(s.depth, 12)}{s.name}"[:80])
        starts.append((s.start_time - t0).total_seconds() * 1000)
        widths.append(max(s.duration_ms, 0.001))
        colors.append(ERROR_COLOR if s.is_error else OPERATION_COLORS.get(s.operation or "", "#c7c7c7"))
        extra = f"<br>error: {s.error_type or ''} {s.status_message or ''}" if s.is_error else ""
        hovers.append(f"{s.name}<br>{s.operation} · {s.duration_ms:.1f} ms{extra}")
    fig = go.Figure(
        go.Bar(
            y=labels,
            x=widths,
            base=starts,
            orientation="h",
            marker_color=colors,
            hovertext=hovers,
            hoverinfo="text",
            customdata=[s.span_id for s in window],
        )
    )
    fig.update_layout(
        title=title,
        height=min(120 + 22 * len(window), 12000),
        xaxis_title="ms since trace start",
        yaxis={"autorange": "reversed", "type": "category"},
        showlegend=False,
        margin={"l": 10},
    )
    return fig


def budget_figure(points: Sequence[BudgetPoint]) -> go.Figure:
    """Share of each budget used at every step's budget check (100% = the limit)."""
    title = "Budget used vs limit"
    names = [n for n in c.BUDGET_NAMES if any(n in p.used and p.limit.get(n) for p in points)]
    if not names:
        return _empty(title, "this run recorded no budget checks")
    fig = go.Figure()
    for name in names:
        xs, ys, text = [], [], []
        for p in points:
            limit = p.limit.get(name)
            if name in p.used and limit:
                xs.append(p.step_index)
                ys.append(100 * p.used[name] / limit)
                text.append(f"{name}: {p.used[name]:g} of {limit:g}")
        fig.add_trace(go.Scatter(x=xs, y=ys, name=name, mode="lines+markers", hovertext=text, hoverinfo="text"))
    fig.add_hline(y=100, line_dash="dash", line_color=ERROR_COLOR, annotation_text="limit")
    fig.update_layout(title=title, xaxis_title="step", yaxis_title="% of limit used", height=320)
    return fig


def failures_figure(failures: Failures, top: int = 15) -> go.Figure:
    """Failed runs per cluster (largest first), labelled by stop reason and signature."""
    title = "Failure clusters"
    clusters = failures.clusters[:top]
    if not clusters:
        return _empty(title, "no failed runs in this range")
    labels = [f"{cl.stop_reason or '?'} · {cluster_label(cl)}"[:70] for cl in clusters]
    fig = go.Figure(go.Bar(x=[cl.count for cl in clusters], y=labels, orientation="h", marker_color=ERROR_COLOR))
    fig.update_layout(title=title, yaxis={"autorange": "reversed"}, height=max(240, 32 * len(clusters) + 100))
    return fig


def cluster_label(cluster: FailureCluster) -> str:
    """A short human name of a cluster: tool and error type, else the message or signature."""
    parts = [p for p in (cluster.tool, cluster.error_type) if p]
    if parts:
        return " / ".join(parts)
    return cluster.message_template or cluster.signature or "(no error span)"


def sparkline_figure(cluster: FailureCluster) -> go.Figure:
    """The cluster's trend as a tiny line without axes (for a table row)."""
    fig = go.Figure(
        go.Scatter(x=[p.bucket for p in cluster.trend], y=[p.count for p in cluster.trend], mode="lines", fill="tozeroy")
    )
    fig.update_layout(
        height=60, margin={"l": 0, "r": 0, "t": 0, "b": 0}, xaxis={"visible": False}, yaxis={"visible": False},
        showlegend=False,
    )
    return fig


def tool_cost_figure(tools: Tools) -> go.Figure:
    """Each tool's cost split into direct, decision and carry (stacked), most expensive on top."""
    title = "Cost per tool: direct + decision + carry"
    rows = tools.tools
    if not rows:
        return _empty(title, "no tool calls in this range")
    names = [t.tool for t in rows]
    fig = go.Figure()
    for part in ("direct", "decision", "carry"):
        fig.add_trace(go.Bar(y=names, x=[getattr(t.cost, part) for t in rows], name=part, orientation="h"))
    fig.update_layout(
        title=title, barmode="stack", xaxis_title="USD", yaxis={"autorange": "reversed"},
        height=max(260, 32 * len(rows) + 120), xaxis_tickformat="$.2~g",
    )
    return fig


def tool_latency_figure(tools: Tools) -> go.Figure:
    """p50 and p95 latency per tool."""
    title = "Tool latency"
    rows = [t for t in tools.tools if t.p50_ms is not None or t.p95_ms is not None]
    if not rows:
        return _empty(title, "no timed tool calls in this range")
    names = [t.tool for t in rows]
    fig = go.Figure(
        [
            go.Bar(x=names, y=[t.p50_ms for t in rows], name="p50 ms"),
            go.Bar(x=names, y=[t.p95_ms for t in rows], name="p95 ms"),
        ]
    )
    fig.update_layout(title=title, barmode="group", yaxis_title="ms", height=320)
    return fig


def cost_figure(report: CostReport, top: int = 25) -> go.Figure:
    """Cost per group key, largest first."""
    title = f"Cost by {report.group_by or 'group'}"
    rows = sorted(report.rows, key=lambda r: r.cost_usd, reverse=True)[:top]
    if not rows:
        return _empty(title, "no cost in this range")
    fig = go.Figure(go.Bar(x=[r.cost_usd for r in rows], y=[r.key or "(none)" for r in rows], orientation="h"))
    fig.update_layout(
        title=title, xaxis_title="USD", yaxis={"autorange": "reversed", "type": "category"},
        height=max(240, 28 * len(rows) + 100),
    )
    return fig
