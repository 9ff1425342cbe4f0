"""Human approval of risky side effects: a call becomes a pending approval, a person decides.

Why the approvals live in a service and not in the agent process: the person deciding is
somewhere else (a terminal running `steplens approvals approve ID`, a dashboard), and the
agent may be one of many processes. The steplens ingest server is the team's shared service, so
`HttpApprovals` registers and polls there (`/api/approvals`); `InMemoryApprovals` is the same
contract inside one process, for tests and demos without a server. The kernel never imports
`ingest`: it talks HTTP.

How a run meets an approval (see `Agent._await_approval`):
1. `ApprovalPolicy.decide` registers the call and answers `pending_approval` with the approval
   id: the call's `execute_tool` span records `steplens.tool.decision=pending_approval` and the
   step becomes kind `approval_wait`.
2. The loop waits on `await_decision(id)`: polling, bounded by `wait_s` and by the run's own
   wall-clock budget.
3. Approved: the call is dispatched again under that verdict (a second `execute_tool` span,
   decision `executed`); rejected: the model sees a `denied` error with the reviewer's reason;
   still pending when the wait ends: the approval is expired on the server (so a late approval
   cannot pretend to have run anything) and the model is told plainly that nothing ran.

Failures are data: an unreachable service denies the call (fail closed) with a reason saying
where it tried; a poll that fails is retried until the wait ends.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import httpx
from pydantic import BaseModel, Field
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from kernel.policy import AllowAll, PolicyDecision, SideEffectPolicy
from kernel.types import ToolCall
from tracer import spans
from tracer.conventions import RiskLevel, ToolDecision

if TYPE_CHECKING:
    from kernel.tools import Tool

API_PATH = "/api/approvals"
_RISK_ORDER = (RiskLevel.LOW, RiskLevel.MEDIUM, RiskLevel.HIGH)


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"  # the agent stopped waiting; nothing ran


class ApprovalRequest(BaseModel):
    """What an agent registers: enough for a person to decide without opening the trace."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    risk: str = RiskLevel.HIGH.value
    agent: str | None = None
    agent_version: str | None = None
    trace_id: str | None = None
    call_id: str | None = None
    summary: str | None = None
    wait_s: float | None = None  # how long the agent will wait (shown to the reviewer)


class Approval(ApprovalRequest):
    """One approval as the service holds it."""

    approval_id: str
    project: str = "default"
    status: ApprovalStatus = ApprovalStatus.PENDING
    created_at: datetime
    decided_at: datetime | None = None
    decided_by: str | None = None
    reason: str | None = None


class ApprovalError(Exception):
    """The approval service could not be reached or refused the request (message says why)."""


@runtime_checkable
class ApprovalBackend(Protocol):
    """Where approvals are stored and decided."""

    async def register(self, request: ApprovalRequest) -> Approval: ...

    async def get(self, approval_id: str) -> Approval: ...

    async def expire(self, approval_id: str, reason: str) -> Approval:
        """Mark a still-pending approval expired; returns the approval's final state (which is
        the reviewer's decision if one arrived first: the service decides the race)."""
        ...


# --------------------------------------------------------------------------------------------
# backends
# --------------------------------------------------------------------------------------------


class InMemoryApprovals:
    """Approvals inside one process (tests, demos). Thread-safe: a test or a UI thread may
    approve while the agent's event loop polls."""

    def __init__(self, project: str = "default") -> None:
        self.project = project
        self._items: dict[str, Approval] = {}
        self._lock = threading.Lock()

    async def register(self, request: ApprovalRequest) -> Approval:
        approval = Approval(**request.model_dump(), approval_id=uuid.uuid4().hex, project=self.project,
                            created_at=datetime.now(UTC))
        with self._lock:
            self._items[approval.approval_id] = approval
        return approval

    async def get(self, approval_id: str) -> Approval:
        with self._lock:
            found = self._items.get(approval_id)
        if found is None:
            raise ApprovalError(f"no approval {approval_id!r}")
        return found

    async def expire(self, approval_id: str, reason: str) -> Approval:
        return self._decide(approval_id, ApprovalStatus.EXPIRED, reason, "agent", strict=False)

    def list(self, status: ApprovalStatus | None = None) -> list[Approval]:
        with self._lock:
            items = list(self._items.values())
        return [a for a in items if status is None or a.status == status]

    def approve(self, approval_id: str, reason: str | None = None, by: str = "tester") -> Approval:
        return self._decide(approval_id, ApprovalStatus.APPROVED, reason, by)

    def reject(self, approval_id: str, reason: str | None = None, by: str = "tester") -> Approval:
        return self._decide(approval_id, ApprovalStatus.REJECTED, reason, by)

    def _decide(self, approval_id: str, status: ApprovalStatus, reason: str | None, by: str,
                strict: bool = True) -> Approval:
        with self._lock:
            current = self._items.get(approval_id)
            if current is None:
                raise ApprovalError(f"no approval {approval_id!r}")
            if current.status != ApprovalStatus.PENDING:
                if strict:
                    raise ApprovalError(f"approval {approval_id} is already {current.status.value}")
                return current
            decided = current.model_copy(update={"status": status, "reason": reason, "decided_by": by,
                                                 "decided_at": datetime.now(UTC)})
            self._items[approval_id] = decided
            return decided


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        detail = body["error"].get("message")
    return str(detail if detail is not None else body)[:300]


class HttpApprovals:
    """The ingest server's `/api/approvals`. Registering and expiring need the `ingest` scope,
    which is what an agent host's key has; the key is sent as `x-api-key` and never logged."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout_s: float = 5.0,
                 register_attempts: int = 3) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"x-api-key": api_key} if api_key else {}
        self.timeout_s = timeout_s
        self.register_attempts = max(1, register_attempts)

    async def _call(self, method: str, path: str, body: dict | None = None, attempts: int = 1) -> Approval:
        url = self.base_url + path
        # Only connection trouble is retried (a restarting server); an HTTP error answer is final.
        retrying = AsyncRetrying(stop=stop_after_attempt(attempts), wait=wait_exponential(multiplier=0.1, max=1.0),
                                 retry=retry_if_exception_type(httpx.TransportError), reraise=True)
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s, headers=self._headers) as client:
                response = await retrying(client.request, method, url, json=body)
        except httpx.HTTPError as exc:
            raise ApprovalError(f"approval service at {self.base_url} unreachable ({type(exc).__name__}: {exc})") from exc
        if response.status_code >= 400:
            raise ApprovalError(f"{method} {path} answered {response.status_code}: {_error_text(response)}")
        try:
            return Approval.model_validate(response.json())
        except ValueError as exc:
            raise ApprovalError(f"{method} {path} answered something that is not an approval: {exc}") from exc

    async def register(self, request: ApprovalRequest) -> Approval:
        return await self._call("POST", API_PATH, request.model_dump(mode="json"), self.register_attempts)

    async def get(self, approval_id: str) -> Approval:
        return await self._call("GET", f"{API_PATH}/{approval_id}")

    async def expire(self, approval_id: str, reason: str) -> Approval:
        return await self._call("POST", f"{API_PATH}/{approval_id}/expire", {"reason": reason}, self.register_attempts)


# --------------------------------------------------------------------------------------------
# the policy
# --------------------------------------------------------------------------------------------


def at_least(risk: RiskLevel) -> Callable[[Tool, ToolCall], bool]:
    """A `needs_approval` rule: side-effect tools of this risk or higher."""
    floor = _RISK_ORDER.index(RiskLevel(risk))
    return lambda tool, call: _RISK_ORDER.index(RiskLevel(tool.risk)) >= floor


class ApprovalPolicy:
    """Side-effect calls that `needs_approval` selects (default: high risk) wait for a person;
    the others go to `inner` (default AllowAll). Implements `SideEffectPolicy` plus
    `await_decision`, which the ReAct loop calls to wait for the verdict."""

    def __init__(
        self,
        backend: ApprovalBackend,
        *,
        wait_s: float = 30.0,
        poll_interval_s: float = 0.5,
        needs_approval: Callable[[Tool, ToolCall], bool] | None = None,
        inner: SideEffectPolicy | None = None,
        agent: str | None = None,
        agent_version: str | None = None,
    ) -> None:
        if wait_s < 0 or poll_interval_s <= 0:
            raise ValueError("wait_s must be >= 0 and poll_interval_s > 0")
        self.backend = backend
        self.wait_s = wait_s
        self.poll_interval_s = poll_interval_s
        self.needs_approval = needs_approval or at_least(RiskLevel.HIGH)
        self.inner = inner or AllowAll()
        self.agent = agent
        self.agent_version = agent_version

    async def decide(self, tool: Tool, call: ToolCall) -> PolicyDecision:
        if not self.needs_approval(tool, call):
            return await self.inner.decide(tool, call)
        request = ApprovalRequest(
            tool=tool.name, arguments=dict(call.arguments), risk=RiskLevel(tool.risk).value, agent=self.agent,
            agent_version=self.agent_version, trace_id=spans.current_trace_id(), call_id=call.id,
            summary=f"{tool.name}({json.dumps(call.arguments, ensure_ascii=False, default=repr)[:300]})",
            wait_s=self.wait_s,
        )
        try:
            approval = await self.backend.register(request)
        except ApprovalError as exc:
            return PolicyDecision(ToolDecision.DENIED, f"{tool.name!r} needs a human approval, but {exc}; denied")
        return PolicyDecision(
            ToolDecision.PENDING_APPROVAL,
            f"approval {approval.approval_id} requested (risk {request.risk}); waiting up to {self.wait_s:g} s",
            approval.approval_id,
        )

    async def await_decision(self, approval_id: str) -> PolicyDecision:
        """Poll until decided or `wait_s` passes. Never raises (cancellation aside): a verdict of
        executed, denied, or pending_approval when nobody decided in time."""
        deadline = time.monotonic() + self.wait_s
        last_problem = ""
        while True:
            try:
                approval = await self.backend.get(approval_id)
                last_problem = ""
                if approval.status != ApprovalStatus.PENDING:
                    return _verdict(approval)
            except ApprovalError as exc:
                last_problem = f" (last poll failed: {exc})"
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await asyncio.sleep(min(self.poll_interval_s, left))
        reason = f"nobody decided within {self.wait_s:g} s; the agent stopped waiting"
        try:
            final = await self.backend.expire(approval_id, reason)
        except ApprovalError as exc:
            return PolicyDecision(ToolDecision.PENDING_APPROVAL,
                                  f"approval {approval_id}: {reason}{last_problem}; could not mark it expired "
                                  f"({exc}). The call was NOT executed.", approval_id)
        if final.status in (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED):
            return _verdict(final)  # decided just before the expiry reached the service
        return PolicyDecision(ToolDecision.PENDING_APPROVAL,
                              f"approval {approval_id} expired: {reason}{last_problem}. The call was NOT "
                              "executed; tell the user it awaits review or escalate.", approval_id)


def _verdict(approval: Approval) -> PolicyDecision:
    who = f" by {approval.decided_by}" if approval.decided_by else ""
    why = f": {approval.reason}" if approval.reason else ""
    if approval.status == ApprovalStatus.APPROVED:
        return PolicyDecision(ToolDecision.EXECUTED, f"approved{who}{why}", approval.approval_id)
    if approval.status == ApprovalStatus.REJECTED:
        return PolicyDecision(ToolDecision.DENIED, f"approval {approval.approval_id} rejected{who}{why}",
                              approval.approval_id)
    return PolicyDecision(ToolDecision.PENDING_APPROVAL,
                          f"approval {approval.approval_id} {approval.status.value}{why}; the call was NOT executed",
                          approval.approval_id)


class Decided:
    """A one-call policy carrying a verdict already reached (the approval's), so the approved
    call goes through the normal dispatch path (validation, rate limit, timeout, spans)."""

    def __init__(self, verdict: PolicyDecision) -> None:
        self.verdict = verdict

    async def decide(self, tool: Tool, call: ToolCall) -> PolicyDecision:
        return self.verdict


@runtime_checkable
class AwaitsApproval(Protocol):
    """A policy that can wait for the verdict on an approval it requested."""

    async def await_decision(self, approval_id: str) -> PolicyDecision: ...
