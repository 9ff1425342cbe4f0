"""Sessions: runs grouped by conversation id. The list (most recently active first, keyset paged);
selecting a session opens its transcript (what the user said, what the agent answered, turn by
turn) and its per-turn table with links to each turn's trace. Deep link: `?session=<id>`.

Transcript lines came from spans, so they are rendered with `st.text` (never Markdown).
"""

from __future__ import annotations

import streamlit as st

from dashboards.saved_views import views_sidebar
from dashboards.text import inert
from dashboards.ui import (
    client,
    empty_state,
    filters_sidebar,
    fmt_ms,
    fmt_usd,
    guard,
    param,
    set_param,
    trace_url,
)

PAGE_SIZE = 50
NO_SESSIONS = ("no sessions in this range: runs join a session when they carry a conversation id "
               "(gen_ai.conversation.id, session.id, langfuse.session.id); `steplens demo` sends some")

st.title("Sessions")
filters = filters_sidebar()
views_sidebar("sessions")
session_id = param("session")
user = st.text_input("User id", value=param("user"), help="Sessions with a run by this user (user.id, enduser.id).")
set_param("user", user.strip() or None)


def _transcript(session_id: str) -> None:
    session = client().session(session_id, filters)
    st.subheader(f"Session {inert(session.session_id)}")
    m = st.columns(6)
    m[0].metric("Turns", session.turns_total)
    m[1].metric("Failed turns", session.failures)
    m[2].metric("Tokens in / out", f"{session.input_tokens:,} / {session.output_tokens:,}")
    m[3].metric("Cost", fmt_usd(session.cost_usd))
    m[4].metric("Duration", fmt_ms(session.duration_ms))
    m[5].metric("Users", len(session.users))
    st.caption(f"project {inert(session.project)} · users {', '.join(inert(u) for u in session.users) or '—'} · "
               f"agents {', '.join(inert(a) for a in session.agents) or '—'}")
    if session.turns_total > len(session.turns):
        st.caption(f"the first {len(session.turns)} of {session.turns_total} turns")
    transcript_tab, turns_tab = st.tabs(["Transcript", "Turns"])
    with transcript_tab:
        for turn in session.turns:
            with st.chat_message("user"):
                st.caption(f"turn {turn.turn} · {inert(turn.user_id or 'unknown user')} · {inert(turn.start_time)}")
                st.text(turn.input or "(no input recorded)")
            with st.chat_message("assistant"):
                status = "ok" if turn.ok else ("failed · " + (turn.stop_reason or "?") if turn.ok is False else "running")
                st.caption(f"{inert(turn.agent or 'agent')} · {inert(status)} · {fmt_ms(turn.duration_ms)} · "
                           f"{fmt_usd(turn.cost_usd)}")
                st.text(turn.output or "(no answer recorded)")
                st.page_link("views/trace.py", label="open this turn's trace", query_params={"trace_id": turn.trace_id},
                             icon=":material/timeline:")
    with turns_tab:
        st.dataframe(
            [{"turn": t.turn, "start": t.start_time, "agent": t.agent, "version": t.version, "user": t.user_id,
              "ok": t.ok, "stop reason": t.stop_reason, "steps": t.steps, "tool calls": t.tool_calls,
              "tool errors": t.tool_errors, "tokens in": t.input_tokens, "tokens out": t.output_tokens,
              "cost $": t.cost_usd, "duration ms": t.duration_ms, "trace": trace_url(t.trace_id)}
             for t in session.turns],
            hide_index=True, column_config={"trace": st.column_config.LinkColumn("trace", display_text="open trace")},
        )  # fmt: skip


if session_id:
    if st.button("All sessions", icon=":material/arrow_back:"):
        set_param("session", None)
        st.rerun()
    with guard():
        _transcript(session_id)
    st.stop()

signature = (filters, user)
if st.session_state.get("sessions_signature") != signature:
    st.session_state["sessions_signature"] = signature
    st.session_state["sessions_cursors"] = [None]
cursors: list[str | None] = st.session_state["sessions_cursors"]

with guard():
    page = client().sessions(filters, user=user.strip() or None, limit=PAGE_SIZE, cursor=cursors[-1])
    if not page.sessions and len(cursors) == 1:
        empty_state(NO_SESSIONS)
        st.stop()
    rows = [
        {"session": s.session_id, "last active": s.last_start, "turns": s.runs, "failed": s.failures,
         "users": ", ".join(s.users), "agents": ", ".join(s.agents), "tokens in": s.input_tokens,
         "tokens out": s.output_tokens, "cost $": s.cost_usd, "duration ms": s.duration_ms}
        for s in page.sessions
    ]  # fmt: skip
    event = st.dataframe(rows, key="sessions_table", hide_index=True, on_select="rerun", selection_mode="single-row")
    selected = getattr(getattr(event, "selection", None), "rows", None) or []
    if selected:
        set_param("session", page.sessions[selected[0]].session_id)
        st.rerun()
    nav = st.columns([1, 1, 4])
    if len(cursors) > 1 and nav[0].button("Previous page", icon=":material/chevron_left:"):
        cursors.pop()
        st.rerun()
    if page.next and nav[1].button("Next page", icon=":material/chevron_right:"):
        cursors.append(page.next)
        st.rerun()
    nav[2].caption(f"page {len(cursors)} · {len(page.sessions)} sessions · select a row to read its transcript")
