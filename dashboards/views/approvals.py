"""Approvals: agents' high-risk tool calls waiting for a person, and the recent decisions.

Why approve/reject here only when the dashboards' key may: deciding is the `admin` scope on the
server. A read-only dashboards key (the usual team setup) still sees the queue, and each pending
call shows the exact `steplens approvals ...` command an admin runs; a server without keys (the
local `make run`) lets the page decide directly. The server settles races (409 when decided).
"""

from __future__ import annotations

import json
import shlex

import streamlit as st

from dashboards.approvals_models import Approval
from dashboards.client import AccessDenied, ApiError
from dashboards.text import inert
from dashboards.ui import client, empty_state, guard, param, set_param, trace_link

STATUSES = ("pending", "approved", "rejected", "expired", "all")
_FLASH = "approvals_flash"

st.title("Approvals")


def _cli(approval: Approval, verb: str) -> str:
    api = client().base_url
    return f"steplens approvals {verb} {approval.approval_id} --reason \"why\" --api {shlex.quote(api)}"


def _decide(approval: Approval, approve: bool, reason: str) -> None:
    verb = "approve" if approve else "reject"
    try:
        decided = client().decide_approval(approval.approval_id, approve, reason.strip() or None)
    except AccessDenied:
        st.session_state[_FLASH] = ("warning", (
            f"this dashboard's API key may not decide approvals (scope admin). An admin can run:\n\n"
            f"`{_cli(approval, verb)}`"))
    except ApiError as exc:
        st.session_state[_FLASH] = ("error", f"{inert(approval.approval_id)}: {inert(exc.message)}")
    else:
        st.session_state[_FLASH] = ("success", f"{inert(decided.approval_id)}: {inert(decided.status)} "
                                               f"({inert(decided.tool)})")
    st.rerun()


def _show(approval: Approval) -> None:
    with st.container(border=True):
        agent = " ".join(inert(x) for x in (approval.agent, approval.agent_version) if x) or "unknown agent"
        when = "" if approval.created_at is None else f"{approval.created_at:%Y-%m-%d %H:%M:%S} UTC"
        st.markdown(f"**{inert(approval.tool)}** · {agent} · risk {inert(approval.risk or '?')} · "
                    f"**{inert(approval.status)}** · {when}")
        st.code(json.dumps(approval.arguments, ensure_ascii=False, indent=2), language="json")
        st.caption(f"id {inert(approval.approval_id)}" + (f" · the agent waits up to {approval.wait_s:g} s"
                                                     if approval.wait_s is not None else ""))
        if approval.trace_id:
            trace_link(approval.trace_id, f"the run's trace {inert(approval.trace_id[:12])}…")
        if approval.status != "pending":
            who = f" by {inert(approval.decided_by)}" if approval.decided_by else ""
            st.caption(f"{inert(approval.status)}{who}" + (f": {inert(approval.reason)}" if approval.reason else ""))
            return
        reason = st.text_input("Reason (shown to the agent)", key=f"reason_{approval.approval_id}")
        left, right, _ = st.columns([1, 1, 4])
        if left.button("Approve", key=f"approve_{approval.approval_id}", icon=":material/check:"):
            _decide(approval, True, reason)
        if right.button("Reject", key=f"reject_{approval.approval_id}", icon=":material/close:"):
            _decide(approval, False, reason)
        st.caption("or from a terminal with an admin key in STEPLENS_API_KEY:")
        st.code(f"{_cli(approval, 'approve')}\n{_cli(approval, 'reject')}", language="bash")


with guard():
    flash = st.session_state.pop(_FLASH, None)
    if flash is not None:
        getattr(st, flash[0])(flash[1])
    current = param("status", "pending")
    status = st.selectbox("Status", STATUSES, index=STATUSES.index(current) if current in STATUSES else 0)
    set_param("status", status)
    approvals = client().approvals(None if status == "all" else status).approvals
    st.metric("Shown", len(approvals))
    if not approvals:
        empty_state("no pending approvals: high-risk side-effect calls of agents using `ApprovalPolicy` wait here."
                    if status == "pending" else f"no {status} approvals.")
    for a in approvals:
        _show(a)
