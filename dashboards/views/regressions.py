"""Regressions: what changed, judged against noise. Flagged findings first, each with example
traces from both sides; release-vs-release comparison; the steps trend against its baseline band."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from dashboards.alerts_models import DriftResult, Finding
from dashboards.ui import (
    client,
    empty_state,
    example_links,
    filters_sidebar,
    fmt_pct,
    guard,
    param,
    set_param,
)

COMPARISONS = {"window": "Last window vs baseline", "release": "Release vs release", "drift": "Drift (steps trend)"}


def _value(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def _side(f: Finding, which: str) -> str:
    side = f.baseline if which == "baseline" else f.current
    if side.value is None:
        return f"— (n={side.n})"
    ci = "" if side.ci_low is None else f" [{_value(side.ci_low)}, {_value(side.ci_high)}]"
    return f"{_value(side.value)}{ci} (n={side.n})"


def findings_table(findings: list[Finding]) -> None:
    # The short, decisive columns first: the table is wider than the page and scrolls sideways.
    rows = [
        {
            "verdict": f.verdict, "agent": f.agent or "(none)", "metric": f.metric, "change": fmt_pct(f.relative_change),
            "q": "—" if f.q_value is None else f"{f.q_value:.2g}",
            "effect": "—" if f.effect_size is None else f"{f.effect_size:+.2f}",
            f"baseline ({findings[0].baseline.label if findings else ''})": _side(f, "baseline"),
            f"current ({findings[0].current.label if findings else ''})": _side(f, "current"), "why": f.reason,
        }
        for f in findings
    ]
    st.dataframe(rows, hide_index=True, key="findings")


def drift_figure(result: DriftResult) -> go.Figure:
    """Mean steps per bucket with the reference mean and a +/-2 standard-error band."""
    xs = [p.start for p in result.points if p.mean is not None]
    ys = [p.mean for p in result.points if p.mean is not None]
    fig = go.Figure()
    if result.reference_mean is not None and result.reference_sd is not None and xs:
        runs = [p.runs for p in result.points if p.mean is not None]
        se = [2 * result.reference_sd / max(n, 1) ** 0.5 for n in runs]
        fig.add_trace(go.Scatter(x=xs + xs[::-1], y=[result.reference_mean + s for s in se]
                                 + [result.reference_mean - s for s in se][::-1],
                                 fill="toself", line={"width": 0}, opacity=0.2, name="baseline band"))
        fig.add_hline(y=result.reference_mean, line_dash="dot", annotation_text="baseline mean")
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name="mean steps per run"))
    alarms = [p for p in result.points if p.alarm and p.mean is not None]
    if alarms:
        fig.add_trace(go.Scatter(x=[p.start for p in alarms], y=[p.mean for p in alarms], mode="markers",
                                 marker={"size": 12, "symbol": "x"}, name="CUSUM alarm"))
    fig.update_layout(title=f"{result.agent or '(no agent)'}: mean steps per run", height=320,
                      margin={"t": 40, "b": 20})
    return fig


st.title("Regressions")
filters = filters_sidebar()
labels = list(COMPARISONS)
current = param("comparison", "window")
comparison = st.radio("Comparison", labels, index=labels.index(current) if current in labels else 0,
                      format_func=COMPARISONS.get, horizontal=True)
set_param("comparison", comparison)

with guard():
    api = client()
    if comparison == "window":
        c1, c2 = st.columns(2)
        window = c1.text_input("Current window", param("window", "24h"))
        baseline = c2.text_input("Baseline before it", param("baseline", "7d"))
        set_param("window", window)
        set_param("baseline", baseline)
        data = api.regressions(filters, "window", window=window, baseline=baseline)
    elif comparison == "release":
        c1, c2 = st.columns(2)
        base_v = c1.text_input("Baseline version (default: the previous one)", param("baseline_version"))
        cur_v = c2.text_input("Current version (default: the newest)", param("current_version"))
        set_param("baseline_version", base_v)
        set_param("current_version", cur_v)
        data = api.regressions(filters, "release", baseline_version=base_v, current_version=cur_v)
    else:
        data = api.regressions(filters, "drift", bucket=param("bucket", "1d"))

    st.metric("Flagged", f"{data.flagged:,}")
    if comparison == "drift":
        if not data.drift:
            empty_state("no runs with steps in this range; drift needs several buckets of runs (try 30d or all).")
            st.stop()
        for i, result in enumerate(data.drift):
            with st.container(border=True):
                st.markdown(f"**{result.agent or '(no agent)'}** · {result.verdict} · {result.reason}")
                if any(p.mean is not None for p in result.points):
                    st.plotly_chart(drift_figure(result), key=f"drift_{i}")
                else:  # an empty chart with made-up axes says nothing
                    st.caption("not enough runs per bucket to draw the trend yet.")
                if result.examples:
                    example_links(result.examples, label="longest runs of the latest bucket")
        st.stop()

    if not data.findings:
        empty_state("nothing to compare: no runs on one of the sides (widen the range or pick other versions).")
        st.stop()
    flagged = [f for f in data.findings if f.flagged]
    if flagged:
        st.subheader("Flagged")
        for f in flagged:
            with st.container(border=True):
                st.markdown(f"**{f.verdict}** · {f.agent or '(no agent)'} · `{f.metric}` {fmt_pct(f.relative_change)} "
                            f"({f.baseline.label} → {f.current.label})")
                st.caption(f.reason)
                example_links(f.current.examples, label="current side")
                example_links(f.baseline.examples, label="baseline side")
    elif all(f.verdict == "insufficient_data" for f in data.findings):
        st.info("Not enough runs to judge yet: each side needs the minimum sample (30 runs by default) "
                "for a metric to be tested. Widen the range or wait for more runs.")
    else:
        st.success("No metric changed beyond noise.")
    st.subheader("All metrics")
    findings_table(data.findings)
