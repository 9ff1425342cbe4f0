"""Alerts: every rule with its state per agent (firing first), and the history of notifications
with links to the evidence traces."""

from __future__ import annotations

import streamlit as st

from dashboards.text import inert
from dashboards.ui import client, empty_state, example_links, guard

st.title("Alerts")

with guard():
    api = client()
    alerts = api.alerts()
    if not alerts.rules:
        empty_state("no alert rules: add [[alerts]] to steplens.toml, or remove `alerts_defaults = false` for the "
                    "built-in ones (see docs/alerts.md).")
    else:
        firing = sum(r.firing for r in alerts.rules)
        st.metric("Rules firing", f"{firing} of {len(alerts.rules)}")
        if any(r.builtin for r in alerts.rules):
            st.caption("Built-in rules (no [[alerts]] configured): every agent, to the server log. Any [[alerts]] in "
                       "steplens.toml replaces them; `alerts_defaults = false` turns them off (docs/alerts.md).")
        rows = []
        for r in alerts.rules:
            hot = [s.subject for s in r.states if s.status == "firing"]
            rows.append({
                "rule": r.rule.get("name", ""), "source": "built-in" if r.builtin else "configured",
                "status": "firing" if r.firing else "ok",
                "firing for": ", ".join(hot) or "—", "kind": r.rule.get("kind", ""),
                "metric": r.rule.get("metric", ""), "modes": ", ".join(r.rule.get("modes") or ["live"]),
                "severity": r.rule.get("severity", ""),
                "last evaluated": "" if r.last_evaluated is None else f"{r.last_evaluated:%Y-%m-%d %H:%M:%S}",
                "error": r.last_error or "",
            })
        st.dataframe(rows, hide_index=True, key="rules")
        for r in alerts.rules:
            for s in r.states:
                if s.status == "firing":
                    st.error(f"{inert(r.rule.get('name', ''))} · {inert(s.subject)}: {inert(s.summary)}",
                             icon=":material/warning:")
            if r.last_error:
                st.warning(f"{inert(r.rule.get('name', ''))} could not be evaluated: {inert(r.last_error)}")

    st.subheader("History")
    events = api.alert_events().events
    if not events:
        st.caption("no alert has fired yet.")
    for e in events:
        with st.container(border=True):
            when = "" if e.time is None else f"{e.time:%Y-%m-%d %H:%M:%S}"
            st.markdown(f"**{inert(e.kind)}** · {inert(e.rule)} · {inert(e.subject)} · {inert(e.severity)} · {when}")
            st.caption(inert(e.summary))
            example_links(e.evidence, label="evidence")
