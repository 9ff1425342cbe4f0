"""Pending approvals were only reachable from the terminal. The Approvals page lists them (with
the exact CLI command), and decides them when the dashboards' key may: against a server without
keys a click approves the call a real agent is waiting on, and the agent runs it; with a read-only
dashboards key the click is refused with the admin command to run instead, and nothing changes."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx

from ingest.config import ApiKey
from kernel.approvals import ApprovalPolicy, ApprovalRequest, HttpApprovals
from tests.dashboards.conftest import open_page, texts
from tests.kernel.approvals._helpers import LEDGER, agent


def _pending(url: str, key: str | None = None) -> list[dict]:
    headers = {"x-api-key": key} if key else {}
    r = httpx.get(f"{url}/api/approvals", params={"status": "pending"}, headers=headers, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["approvals"]


def test_page_approves_the_call_a_waiting_agent_then_runs(start_ingest_server, ui_env) -> None:
    srv = start_ingest_server(grpc_port=0)
    LEDGER.clear()
    policy = ApprovalPolicy(HttpApprovals(srv.http_url), wait_s=30, poll_interval_s=0.1, agent="refunder",
                            agent_version="v1")
    outcome: dict = {}
    waiting = threading.Thread(target=lambda: outcome.setdefault("result", asyncio.run(agent(policy).run("refund A1"))))
    waiting.start()
    deadline = time.monotonic() + 15
    while not (pending := _pending(srv.http_url)) and time.monotonic() < deadline:
        time.sleep(0.05)
    [approval] = pending
    aid = approval["approval_id"]

    ui_env(srv.http_url)
    at = open_page("approvals")
    assert not at.exception
    shown = texts(at)
    assert "**refund** · refunder v1 · risk high · **pending**" in shown
    assert f"steplens approvals approve {aid}" in shown and f"steplens approvals reject {aid}" in shown
    at.text_input(key=f"reason_{aid}").input("order checked")
    at.button(key=f"approve_{aid}").click().run()
    assert not at.exception
    assert f"{aid}: approved (refund)" in texts(at)

    waiting.join(20)
    result = outcome["result"]
    assert result.ok and LEDGER == [{"order_id": "A1", "amount_usd": 500}]
    decided = httpx.get(f"{srv.http_url}/api/approvals/{aid}", timeout=10).json()
    assert decided["status"] == "approved" and decided["reason"] == "order checked"
    assert _pending(srv.http_url) == []
    at = open_page("approvals", {"status": "approved"})
    assert "approved by anonymous: order checked" in texts(at)


def test_read_only_key_sees_the_queue_and_gets_the_cli_command(start_ingest_server, ui_env) -> None:
    srv = start_ingest_server(grpc_port=0, api_keys=[
        ApiKey(key="agent-key-0123456789", project="shop", scopes=["ingest"]),
        ApiKey(key="ui-key-0123456789", project="shop", scopes=["read"]),
    ])
    backend = HttpApprovals(srv.http_url, "agent-key-0123456789")
    approval = asyncio.run(backend.register(ApprovalRequest(tool="refund", arguments={"order_id": "B2"},
                                                            agent="refunder", agent_version="v2")))
    aid = approval.approval_id

    ui_env(srv.http_url, key="ui-key-0123456789")
    at = open_page("approvals")
    assert not at.exception and "**refund** · refunder v2" in texts(at)
    at.button(key=f"reject_{aid}").click().run()
    shown = texts(at)
    assert "may not decide approvals (scope admin)" in shown and f"steplens approvals reject {aid}" in shown
    assert [a["approval_id"] for a in _pending(srv.http_url, "ui-key-0123456789")] == [aid]
