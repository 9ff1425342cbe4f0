"""Approvals through the real ingest server: an agent registers over HTTP and waits; a reviewer
lists and approves with `steplens approvals ...`; the server decides each approval once and keeps
projects and scopes apart."""

from __future__ import annotations

import threading

import httpx
import pytest
from typer.testing import CliRunner

from kernel.approvals import ApprovalPolicy, ApprovalRequest, ApprovalStatus, HttpApprovals
from steplens.cli import app
from tests.ingest.api.harness import BACKENDS
from tests.kernel.approvals._helpers import LEDGER, agent
from tracer.conventions import StepKind, ToolDecision


def _cli(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "240", **(env or {})})


def _pending(base: str) -> list[dict]:
    return httpx.get(f"{base}/api/approvals", params={"status": "pending"}, timeout=10).json()["approvals"]


async def test_agent_waits_reviewer_approves_with_the_cli(ingest_server) -> None:
    base = ingest_server.http_url
    LEDGER.clear()
    seen: dict[str, str] = {}

    def reviewer() -> None:
        for _ in range(500):
            pending = _pending(base)
            if pending:
                seen["list"] = _cli("approvals", "list", "--api", base).output
                result = _cli("approvals", "approve", pending[0]["approval_id"], "--reason", "ok by policy",
                              "--by", "ana", "--api", base)
                seen["approve"] = result.output
                seen["again"] = str(_cli("approvals", "approve", pending[0]["approval_id"], "--api", base).exit_code)
                return
            threading.Event().wait(0.02)

    thread = threading.Thread(target=reviewer)
    thread.start()
    result = await agent(ApprovalPolicy(HttpApprovals(base), wait_s=20, poll_interval_s=0.05,
                                        agent="refunder", agent_version="v1")).run("refund A1")
    thread.join()
    assert result.ok and LEDGER == [{"order_id": "A1", "amount_usd": 500.0}]
    assert result.steps[0].kind == StepKind.APPROVAL_WAIT
    assert result.steps[0].observations[0].decision == ToolDecision.EXECUTED
    assert "refund" in seen["list"] and "refunder v1" in seen["list"]
    assert "approved" in seen["approve"]
    assert seen["again"] == "1"  # already decided: refused, not overwritten

    [stored] = httpx.get(f"{base}/api/approvals", params={"status": "approved"}, timeout=10).json()["approvals"]
    assert stored["decided_by"] == "ana" and stored["reason"] == "ok by policy"
    assert stored["arguments"] == {"order_id": "A1", "amount_usd": 500}
    assert _pending(base) == []


@pytest.mark.parametrize("backend", BACKENDS)
async def test_reject_with_reason_and_expiry_race(start_ingest_server, backend: str) -> None:
    base = start_ingest_server(store=backend).http_url
    backend = HttpApprovals(base)
    a = await backend.register(ApprovalRequest(tool="refund", arguments={"x": 1}))
    assert a.status == ApprovalStatus.PENDING
    out = _cli("approvals", "reject", a.approval_id, "--reason", "too much", "--api", base)
    assert out.exit_code == 0, out.output
    # the agent's expiry after a decision answers the decision, not "expired"
    final = await backend.expire(a.approval_id, "stopped waiting")
    assert final.status == ApprovalStatus.REJECTED and final.reason == "too much"
    b = await backend.register(ApprovalRequest(tool="refund"))
    assert (await backend.expire(b.approval_id, "stopped waiting")).status == ApprovalStatus.EXPIRED
    assert _cli("approvals", "approve", b.approval_id, "--api", base).exit_code == 1
    assert _cli("approvals", "approve", "nope", "--api", base).exit_code == 1
    listed = _cli("approvals", "list", "--status", "all", "--api", base)
    assert listed.exit_code == 0 and "expired" in listed.output and "rejected" in listed.output


@pytest.mark.parametrize("backend", BACKENDS)
def test_scopes_and_projects(start_ingest_server, monkeypatch, backend: str) -> None:
    keys = [
        {"key": "agent-a", "project": "a", "scopes": ["ingest"]},
        {"key": "read-b", "project": "b", "scopes": ["read"]},
        {"key": "read-a", "project": "a", "scopes": ["read"]},
        {"key": "admin", "project": "a", "scopes": ["admin"]},
        {"key": "admin-b", "project": "b", "scopes": ["admin"]},
    ]
    srv = start_ingest_server(api_keys=keys, store=backend)
    base = srv.http_url

    def call(method: str, path: str, key: str | None, **kw):
        headers = {"x-api-key": key} if key else {}
        return httpx.request(method, base + path, headers=headers, timeout=10, **kw)

    created = call("POST", "/api/approvals", "agent-a", json={"tool": "refund", "arguments": {"n": 1}})
    assert created.status_code == 201 and created.json()["project"] == "a"
    aid = created.json()["approval_id"]
    assert created.json()["requested_by"].startswith("api_keys[0]")
    assert call("POST", "/api/approvals", None, json={"tool": "refund"}).status_code == 401
    assert call("POST", "/api/approvals", "read-a", json={"tool": "refund"}).status_code == 403
    assert call("POST", "/api/approvals", "agent-a", json={"tool": ""}).status_code == 422
    assert call("GET", f"/api/approvals/{aid}", "agent-a").status_code == 200  # the agent polls
    assert call("GET", f"/api/approvals/{aid}", "read-b").status_code == 404  # another project's
    assert call("GET", "/api/approvals", "read-b").json()["approvals"] == []
    assert [x["approval_id"] for x in call("GET", "/api/approvals", "read-a").json()["approvals"]] == [aid]
    assert call("POST", f"/api/approvals/{aid}/approve", "read-a").status_code == 403
    assert call("POST", f"/api/approvals/{aid}/approve", "agent-a").status_code == 403
    monkeypatch.setenv("STEPLENS_API_KEY", "read-a")
    assert _cli("approvals", "approve", aid, "--api", base).exit_code == 1
    monkeypatch.setenv("STEPLENS_API_KEY", "admin-b")  # another project's admin: as if it did not exist
    assert _cli("approvals", "approve", aid, "--api", base).exit_code == 1
    assert call("POST", f"/api/approvals/{aid}/approve", "admin-b").status_code == 404
    assert call("GET", f"/api/approvals/{aid}", "read-a").json()["status"] == "pending"
    monkeypatch.setenv("STEPLENS_API_KEY", "admin")
    assert _cli("approvals", "approve", aid, "--api", base).exit_code == 0
    assert call("GET", f"/api/approvals/{aid}", "read-a").json()["status"] == "approved"


def test_cli_says_when_no_server_answers() -> None:
    out = _cli("approvals", "list", "--api", "http://127.0.0.1:9")
    assert out.exit_code == 2 and "no steplens server answers" in out.output
