"""Compare: two runs of the same agent aligned step by step; where they first diverged and the
difference in steps, tokens and cost (b minus a). Deep link: `?a=<trace id>&b=<trace id>`."""

from __future__ import annotations

import streamlit as st

from dashboards.text import inert
from dashboards.trace_view import as_text
from dashboards.ui import client, guard, param, set_param, trace_link

PREVIEW = 200


def _cell(value: object) -> str | None:
    text = as_text(value)
    if text is None:
        return None
    return text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"


st.title("Compare runs")
cols = st.columns(2)
a = cols[0].text_input("Run A (trace id)", value=param("a")).strip()
b = cols[1].text_input("Run B (trace id)", value=param("b")).strip()
set_param("a", a or None)
set_param("b", b or None)
if not (a and b):
    st.info("Give two trace ids of runs of the same agent (open a trace and use \"Compare with another run\").",
            icon=":material/info:")
    st.stop()

with guard():
    diff = client().diff(a, b)
    links = st.columns(2)
    with links[0]:
        trace_link(diff.a.trace_id, f"A: {inert(diff.a.agent)} {inert(diff.a.version)} · {inert(diff.a.stop_reason)}")
    with links[1]:
        trace_link(diff.b.trace_id, f"B: {inert(diff.b.agent)} {inert(diff.b.version)} · {inert(diff.b.stop_reason)}")
    d = diff.delta
    m = st.columns(4)
    m[0].metric("Steps (B − A)", f"{d.steps:+d}")
    m[1].metric("Input tokens (B − A)", f"{d.input_tokens:+,}")
    m[2].metric("Output tokens (B − A)", f"{d.output_tokens:+,}")
    m[3].metric("Cost (B − A)", f"{'+' if d.cost_usd >= 0 else '−'}${abs(d.cost_usd):.6f}")
    fd = diff.first_divergence
    if fd is None:
        st.success("The runs took the same actions with the same arguments and observations at every step.")
    else:
        st.warning(f"First divergence at **step {fd.step}**, in the **{inert(fd.field)}**.", icon=":material/call_split:")
        left, right = st.columns(2)
        left.code(as_text(fd.a) or "(nothing)", language=None)
        right.code(as_text(fd.b) or "(nothing)", language=None)
    st.subheader("Steps side by side")
    st.dataframe(
        [
            {
                "step": s.index,
                "same": s.same,
                "A action": _cell(s.a.action) if s.a else None,
                "B action": _cell(s.b.action) if s.b else None,
                "A arguments": _cell(s.a.arguments) if s.a else None,
                "B arguments": _cell(s.b.arguments) if s.b else None,
                "A observation": _cell(s.a.observation) if s.a else None,
                "B observation": _cell(s.b.observation) if s.b else None,
            }
            for s in diff.steps
        ],
        hide_index=True,
    )
