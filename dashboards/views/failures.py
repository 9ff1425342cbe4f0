"""Failures: failed runs clustered by stop reason and failure signature, each with example traces."""

from __future__ import annotations

import streamlit as st

from dashboards import charts
from dashboards.text import code, inert
from dashboards.ui import client, empty_state, example_links, filters_sidebar, fmt_pct, guard

PAGE_SIZE = 20

st.title("Failures")
filters = filters_sidebar()

with guard():
    data = client().failures(filters)
    st.metric("Failed runs", f"{data.total_failed:,}")
    if not data.clusters:
        empty_state(
            "no failed runs in this range. If there are no runs at all yet, run `steplens demo`; "
            "otherwise widen the time range."
        )
        st.stop()
    st.plotly_chart(charts.failures_figure(data), key="failure_clusters")
    pages = max(1, -(-len(data.clusters) // PAGE_SIZE))
    page = st.number_input("Cluster page", 1, pages, 1, key="failures_page") if pages > 1 else 1
    start = (int(page) - 1) * PAGE_SIZE
    for i, cluster in enumerate(data.clusters[start : start + PAGE_SIZE], start=start):
        with st.container(border=True):
            head, spark = st.columns([3, 1])
            with head:
                st.markdown(f"**{inert(cluster.stop_reason or '?')}** · {inert(charts.cluster_label(cluster))}")
                st.caption(
                    f"{cluster.count:,} runs ({fmt_pct(cluster.share)} of failures) · first "
                    f"{cluster.first_seen:%Y-%m-%d %H:%M} · last {cluster.last_seen:%Y-%m-%d %H:%M} · versions: "
                    f"{', '.join(inert(v or '(none)') for v in cluster.versions) or '—'}"
                    if cluster.first_seen and cluster.last_seen
                    else f"{cluster.count:,} runs ({fmt_pct(cluster.share)} of failures)"
                )
                if cluster.message_template:
                    st.code(cluster.message_template, language=None)
                st.caption(f"signature: {code(cluster.signature)}")
            with spark:
                if cluster.trend:
                    st.plotly_chart(charts.sparkline_figure(cluster), key=f"spark_{i}",
                                    config={"displayModeBar": False})
            example_links(cluster.examples, label="example traces")
