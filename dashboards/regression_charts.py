"""Pure builders for the Regressions page: the findings table rows and the drift trend figure.

Why outside the page script: pages hold widget glue only, and tests call these directly with the
numbers they expect to see drawn.
"""

from __future__ import annotations

import plotly.graph_objects as go

from dashboards.alerts_models import DriftResult, Finding, FindingSide
from dashboards.charts import LEGEND_TOP
from dashboards.ui import fmt_pct


def _value(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def side_cell(side: FindingSide) -> str:
    """`mean [ci_low, ci_high] (n=...)`: the value with its confidence interval and sample size."""
    if side.value is None:
        return f"— (n={side.n})"
    ci = "" if side.ci_low is None else f" [{_value(side.ci_low)}, {_value(side.ci_high)}]"
    return f"{_value(side.value)}{ci} (n={side.n})"


def findings_rows(findings: list[Finding]) -> list[dict[str, str]]:
    """One row per finding, the decisive columns (verdict, change, p, q) before the long ones."""
    base = f"baseline ({findings[0].baseline.label})" if findings else "baseline"
    cur = f"current ({findings[0].current.label})" if findings else "current"
    if any(f.release is not None for f in findings):  # cohort: one table over several releases
        base, cur = "stable", "candidate"
        return [
            {"verdict": f.verdict, "agent": f.agent or "(none)", "release": f.release or "(none)", "metric": f.metric,
             "change": fmt_pct(f.relative_change), "p": "—" if f.p_value is None else f"{f.p_value:.2g}",
             "q (Holm)": "—" if f.q_value is None else f"{f.q_value:.2g}",
             "effect": "—" if f.effect_size is None else f"{f.effect_size:+.2f}",
             base: side_cell(f.baseline), cur: side_cell(f.current), "why": f.reason}
            for f in findings
        ]
    return [
        {
            "verdict": f.verdict, "agent": f.agent or "(none)", "metric": f.metric,
            "change": fmt_pct(f.relative_change),
            "p": "—" if f.p_value is None else f"{f.p_value:.2g}",
            "q (Holm)": "—" if f.q_value is None else f"{f.q_value:.2g}",
            "effect": "—" if f.effect_size is None else f"{f.effect_size:+.2f}",
            base: side_cell(f.baseline), cur: side_cell(f.current), "why": f.reason,
        }
        for f in findings
    ]


def drift_label(metric: str) -> str:
    """What a drift chart plots: mean steps per run, or a score's mean (share) per scored run."""
    return "mean steps per run" if metric == "steps" else f"{metric} per scored run"


def drift_figure(result: DriftResult) -> go.Figure:
    """The watched metric's mean per bucket (steps, or a score) with the reference mean and a
    +/-2 standard-error band; alarms marked."""
    label = drift_label(result.metric)
    drawn = [p for p in result.points if p.mean is not None]
    xs = [p.start for p in drawn]
    ys = [p.mean for p in drawn]
    fig = go.Figure()
    if result.reference_mean is not None and result.reference_sd is not None and drawn:
        se = [2 * result.reference_sd / max(p.runs, 1) ** 0.5 for p in drawn]
        fig.add_trace(go.Scatter(x=xs + xs[::-1], y=[result.reference_mean + s for s in se]
                                 + [result.reference_mean - s for s in se][::-1],
                                 fill="toself", line={"width": 0}, opacity=0.2, name="baseline band"))
        fig.add_hline(y=result.reference_mean, line_dash="dot", annotation_text="baseline mean")
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=label))
    alarms = [p for p in drawn if p.alarm]
    if alarms:
        fig.add_trace(go.Scatter(x=[p.start for p in alarms], y=[p.mean for p in alarms], mode="markers",
                                 marker={"size": 12, "symbol": "x"}, name="CUSUM alarm"))
    fig.update_layout(title=f"{result.agent or '(no agent)'}: {label}", height=320,
                      margin={"t": 60, "b": 20}, legend=LEGEND_TOP,
                      yaxis_title="steps" if result.metric == "steps" else result.metric)
    return fig
