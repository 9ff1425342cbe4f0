"""Search: full-text search over span content, ranked, each hit with its highlighted passage and a link
to its trace. The words (`q`) and the optional span filter (`span_filter`) live in the URL, so a search is shareable.

Every value from a span (names, fields, snippets) is rendered inert (dashboards/text.py): only the bold
around matched words is ours.
"""

from __future__ import annotations

import streamlit as st

from dashboards.search_models import SearchResult
from dashboards.text import inert
from dashboards.ui import client, filters_sidebar, guard, param, set_param, trace_link, url_text_input

LIMITS = (20, 50, 100)


def snippet_markdown(result: SearchResult) -> str:
    """The passage as Markdown: every piece escaped, matched words in bold."""
    return "".join(f"**{inert(s.text)}**" if s.match and s.text.strip() else inert(s.text) for s in result.snippet)


st.title("Search")
filters = filters_sidebar()
cols = st.columns([3, 3, 1])
with cols[0]:
    q = url_text_input("q", "Words", placeholder="timeout", help="Every word must appear in one field.")
with cols[1]:
    expression = url_text_input("span_filter", "Filter (spans)", placeholder='tool_name = "refund"')
limit_value = param("limit", "20")
limit = cols[2].selectbox("Results", LIMITS, index=LIMITS.index(int(limit_value)) if limit_value in {"20", "50", "100"}
                          else 0)
set_param("limit", None if limit == 20 else str(limit))

if not q.strip():
    st.info("Type words to find in tasks, answers, messages, thoughts, tool arguments and results, and errors.",
            icon=":material/search:")
    st.stop()

with guard():
    answer = client().search(q.strip(), filters, expression=expression.strip() or None, limit=limit)
    index = answer.index
    if index.error:
        st.warning(f"The search index is behind and retrying: {inert(index.error)}", icon=":material/warning:")
    if index.rebuilding:
        st.caption(f"The index is being rebuilt (through {index.rebuilt_through}); older results may be missing.")
    elif index.pending_spans:
        st.caption(f"{index.pending_spans} newest spans are not searchable yet (lag {index.lag_s:.1f} s).")
    if not answer.results:
        st.info("Nothing matches in this time range.", icon=":material/info:")
        st.stop()
    st.caption(f"{len(answer.results)} spans, best match first")
    for result in answer.results:
        with st.container(border=True):
            where = " · ".join(inert(v) for v in (result.name, result.agent_name, result.tool_name) if v)
            st.markdown(f"{where}  \n{inert(result.field)} · score {result.score:.3g} · {inert(result.start_time)}")
            st.markdown(snippet_markdown(result))
            trace_link(result.trace_id, label=f"open trace {result.trace_id[:12]}…")
