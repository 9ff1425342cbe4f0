"""Evaluators: the online evaluator rules of steplens.toml with their recent results (evaluated,
passed, failed, errors, the judge's cost) and, per rule, the latest outcomes linking to the judged
run and to the judge's own run."""

from __future__ import annotations

import streamlit as st

from dashboards.text import inert
from dashboards.ui import client, empty_state, fmt_usd, guard, trace_url

WINDOWS = {"last 24 hours": "24h", "last 7 days": "7d", "last 30 days": "30d"}

st.title("Evaluators")

with guard():
    window = st.selectbox("Results of", list(WINDOWS), key="evaluators_window")
    api = client()
    answer = api.evaluators(since=WINDOWS[window or "last 24 hours"])
    if not answer.evaluators:
        empty_state("no evaluator rules: add [[evaluators]] to steplens.toml (see the README's Online evaluators "
                    "section), then `steplens eval backfill --rule NAME --since 7d` to score past runs.")
    else:
        rows = []
        for e in answer.evaluators:
            rule, s = e.rule, e.summary
            scored = s.evaluated
            rows.append({
                "rule": rule.get("name", ""),
                "evaluator": (rule.get("evaluator") or {}).get("kind", ""),
                "score": (rule.get("score") or {}).get("name", ""),
                "sampling": f"{float(rule.get('sample_rate', 1.0)):.0%}",
                "evaluated": scored, "passed": s.passed, "failed": s.failed, "errors": s.errors,
                "pass rate": "—" if not (s.passed + s.failed) else f"{s.passed / (s.passed + s.failed):.0%}",
                "evaluation cost": fmt_usd(s.cost_usd) if (rule.get("evaluator") or {}).get("kind") == "judge" else "—",
                "last evaluated": "" if s.last_evaluated is None else f"{s.last_evaluated:%Y-%m-%d %H:%M:%S}",
            })
        st.dataframe(rows, hide_index=True, key="evaluator_rules")
        st.caption("Evaluation cost is what the judge model's own runs cost (mode eval); it is never part of the "
                   "agents' cost on the other pages.")
        for e in answer.evaluators:
            name = inert(e.rule.get("name", ""))
            if e.last_error:
                st.warning(f"{name}: the last pass failed: {inert(e.last_error)}")
            with st.expander(f"{name}: latest results ({len(e.recent)})", expanded=False):
                if not e.recent:
                    st.caption("no evaluation in this window yet.")
                    continue
                outcomes = [{
                    "run": trace_url(o.trace_id),
                    "status": o.status,
                    "value": "" if o.value is None else str(o.value),
                    "passed": "" if o.passed is None else ("yes" if o.passed else "no"),
                    "reason": o.reason or "",
                    "judge run": trace_url(o.judge_trace_ids[-1]) if o.judge_trace_ids else None,
                    "cost": "" if o.cost_usd is None else fmt_usd(o.cost_usd),
                    "attempts": o.attempts,
                    "evaluated": "" if o.evaluated_at is None else f"{o.evaluated_at:%Y-%m-%d %H:%M:%S}",
                } for o in e.recent]
                st.dataframe(outcomes, hide_index=True, key=f"outcomes_{e.rule.get('name', '')}", column_config={
                    "run": st.column_config.LinkColumn("run", display_text="open run"),
                    "judge run": st.column_config.LinkColumn("judge run", display_text="open judge run"),
                })
