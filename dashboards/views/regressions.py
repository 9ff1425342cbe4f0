"""Regressions: what changed, judged against noise. Flagged findings first, each with example
traces from both sides; release-vs-release comparison; a gray release's candidate vs stable
cohort over the same period; the trend of steps (or of a score) against
its baseline band. Score metrics (`score:NAME`) are findings like the others."""

from __future__ import annotations

import streamlit as st

from dashboards.regression_charts import drift_figure, findings_rows
from dashboards.regressions_default import choose_opening
from dashboards.text import code, inert
from dashboards.ui import (
    DEFAULT_RANGE,
    client,
    empty_state,
    example_links,
    filters_sidebar,
    fmt_pct,
    guard,
    param,
    set_param,
)

COMPARISONS = {"window": "Last window vs baseline", "release": "Release vs release", "drift": "Drift (trend)",
               "cohort": "Candidate vs stable"}


st.title("Regressions")
filters = filters_sidebar()
labels = list(COMPARISONS)
if not param("comparison"):  # a link without one opens on the first comparison that has data
    with guard():
        opening = choose_opening(client(), filters, str(st.session_state.get("w_since", DEFAULT_RANGE)))
        set_param("comparison", opening.comparison)
        if opening.widened:
            st.session_state["keep_since"] = opening.since
            set_param("since", opening.since)
            st.session_state["regressions_widened"] = opening.since
        st.rerun()
    st.stop()
widened = st.session_state.pop("regressions_widened", None)
if widened:
    st.info(f"Opened on the whole history ({widened}): the selected time range had nothing to compare.",
            icon=":material/info:")
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
    elif comparison == "cohort":
        release = st.text_input("Gray release (default: every release in range)", param("release"))
        set_param("release", release)
        st.caption("Each gray release's candidate cohort against its stable cohort over the same period "
                   "(the sidebar's range; the last 7 days when it has none): same traffic, same hours.")
        data = api.regressions(filters, "cohort", release=release)
    else:
        metric = st.text_input("Metric (steps, or a score: score:NAME, score:NAME=LABEL)", param("metric", "steps"))
        set_param("metric", metric)
        data = api.regressions(filters, "drift", bucket=param("bucket", "1d"),
                               metrics=None if metric.strip() in ("", "steps") else metric.strip())

    st.metric("Flagged", f"{data.flagged:,}")
    if comparison == "drift":
        if not data.drift:
            empty_state("no runs with this metric in this range; drift needs several buckets of runs (try 30d or all).")
            st.stop()
        for i, result in enumerate(data.drift):
            with st.container(border=True):
                st.markdown(f"**{inert(result.agent or '(no agent)')}** · {inert(result.verdict)} · {inert(result.reason)}")
                if any(p.mean is not None for p in result.points):
                    st.plotly_chart(drift_figure(result), key=f"drift_{i}")
                else:  # an empty chart with made-up axes says nothing
                    st.caption("not enough runs per bucket to draw the trend yet.")
                if result.examples:
                    example_links(result.examples, label="longest runs of the latest bucket")
        st.stop()

    if not data.findings:
        empty_state("no gray release with routed runs in this range (kernel.release; widen the range)."
                    if comparison == "cohort" else
                    "nothing to compare: no runs on one of the sides (widen the range or pick other versions).")
        st.stop()
    flagged = [f for f in data.findings if f.flagged]
    if flagged:
        st.subheader("Flagged")
        for f in flagged:
            with st.container(border=True):
                where = f" · release {inert(f.release)}" if f.release else ""
                st.markdown(f"**{inert(f.verdict)}** · {inert(f.agent or '(no agent)')}{where} · {code(f.metric)} "
                            f"{fmt_pct(f.relative_change)} ({inert(f.baseline.label)} → {inert(f.current.label)})")
                st.caption(inert(f.reason))
                cohort = comparison == "cohort"
                example_links(f.current.examples, label="candidate side" if cohort else "current side")
                example_links(f.baseline.examples, label="stable side" if cohort else "baseline side")
    elif all(f.verdict == "insufficient_data" for f in data.findings):
        st.info("Not enough runs to judge yet: each side needs the minimum sample (30 runs by default) "
                "for a metric to be tested. Widen the range or wait for more runs.")
    else:
        st.success("No metric changed beyond noise.")
    st.subheader("All metrics")
    # The short, decisive columns come first: the table is wider than the page and scrolls sideways.
    st.dataframe(findings_rows(data.findings), hide_index=True, key="findings")
