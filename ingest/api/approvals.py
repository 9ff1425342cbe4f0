"""`/api/approvals`: human approval of agents' risky tool calls (the kernel's `ApprovalPolicy`).

The query API is otherwise read-only; these routes are its only writes besides
`POST /api/alerts/check`, and each needs a scope that says so:
- `POST /api/approvals` (scope `ingest`, what an agent host's key has): register a pending call;
  the approval belongs to the key's project.
- `GET /api/approvals/{id}` (scope `ingest` or `read`): one approval; agents poll it.
- `POST /api/approvals/{id}/expire` (scope `ingest`): the agent stopped waiting; answers the final
  state, which is the reviewer's decision when one arrived first.
- `GET /api/approvals?status=pending` (scope `read`): the review queue, newest first.
- `POST /api/approvals/{id}/approve` and `/reject` (scope `admin`): decide; 409 when already decided.

Writes go through the store's single writer (`run_write`).
No `from __future__ import annotations`: FastAPI must evaluate the `Depends(...)` hints.
"""

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from pydantic import BaseModel, Field, field_validator

from ingest import approvals as db
from ingest.api.access import ReadAccess, principal_read_access
from ingest.api.execute import ReadableStore, run_read
from ingest.auth import Principal, authorize, presented_key, require_scope
from ingest.errors import Forbidden
from ingest.store.work import work_of

_MAX_ARGUMENT_BYTES = 64 * 1024


class ApprovalIn(BaseModel):
    """What an agent registers (kernel.approvals.ApprovalRequest)."""

    tool: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)
    risk: str | None = Field(default=None, max_length=32)
    agent: str | None = Field(default=None, max_length=200)
    agent_version: str | None = Field(default=None, max_length=200)
    trace_id: str | None = Field(default=None, max_length=64)
    call_id: str | None = Field(default=None, max_length=200)
    summary: str | None = Field(default=None, max_length=2000)
    wait_s: float | None = Field(default=None, ge=0)

    @field_validator("arguments")
    @classmethod
    def _small(cls, value: dict[str, Any]) -> dict[str, Any]:
        import json

        if len(json.dumps(value, default=str)) > _MAX_ARGUMENT_BYTES:
            raise ValueError(f"arguments over {_MAX_ARGUMENT_BYTES} bytes as JSON")
        return value


class DecisionIn(BaseModel):
    reason: str | None = Field(default=None, max_length=2000)
    by: str | None = Field(default=None, max_length=200, description="Who decided (default: the key's name).")


class ApprovalOut(BaseModel):
    """Field names match kernel.approvals.Approval."""

    approval_id: str
    project: str
    status: Literal["pending", "approved", "rejected", "expired"]
    tool: str
    arguments: dict[str, Any]
    risk: str | None
    agent: str | None
    agent_version: str | None
    trace_id: str | None = Field(description="Open it with GET /api/traces/{trace_id}.")
    call_id: str | None
    summary: str | None
    wait_s: float | None
    requested_by: str | None
    created_at: datetime
    decided_at: datetime | None
    decided_by: str | None
    reason: str | None

    @classmethod
    def of(cls, row: db.ApprovalRow) -> "ApprovalOut":
        return cls(
            approval_id=row.approval_id, project=row.project, status=row.status, tool=row.tool,
            arguments=row.arguments, risk=row.risk, agent=row.agent, agent_version=row.agent_version,
            trace_id=row.trace_id, call_id=row.call_id, summary=row.summary, wait_s=row.wait_s,
            requested_by=row.requested_by, created_at=row.created_at.replace(tzinfo=UTC),
            decided_at=row.decided_at.replace(tzinfo=UTC) if row.decided_at else None,
            decided_by=row.decided_by, reason=row.reason,
        )


class ApprovalsOut(BaseModel):
    approvals: list[ApprovalOut]


async def _ingest_or_read(request: Request) -> Principal:
    """Agents poll with their ingest key; reviewers and dashboards read with a read key."""
    principal = getattr(request.state, "principal", None)
    if principal is None:
        principal = request.app.state.keyring.authenticate(
            presented_key(request.headers.get("authorization"), request.headers.get("x-api-key"))
        )
    try:
        return authorize(principal, "read")
    except Forbidden:
        return authorize(principal, "ingest")


def _projects(principal: Principal) -> frozenset[str] | None:
    projects = principal.projects
    return None if projects is None else frozenset(projects)


def build_approvals_router(store: Any, read_access: Callable[..., Any] | None = None,
                           timeout_s: float | None = None) -> APIRouter:
    """Mount under /api. `store` needs `read()` and `run_write(fn) -> Future` (either store)."""
    read_access = read_access or principal_read_access()
    readable: ReadableStore = store
    work = work_of(store)  # the store's own SQL for the approvals table
    router = APIRouter(tags=["approvals"])

    async def write(fn: Callable[[Any], Any]) -> Any:
        try:
            return await asyncio.wrap_future(store.run_write(fn))
        except db.NotPending:
            raise
        except RuntimeError as exc:  # store not started or writer failed
            raise HTTPException(503, f"approvals store unavailable: {exc}", headers={"Retry-After": "1"}) from exc

    def found(row: db.ApprovalRow | None, approval_id: str) -> ApprovalOut:
        if row is None:
            raise HTTPException(404, f"no approval {approval_id!r} visible to this key")
        return ApprovalOut.of(row)

    @router.post("/approvals", response_model=ApprovalOut, status_code=201,
                 summary="Register a pending tool call (scope ingest; a write, unlike the rest of /api)")
    async def register(body: ApprovalIn, caller: Annotated[Principal, Depends(require_scope("ingest"))]) -> ApprovalOut:
        new = db.NewApproval(**body.model_dump())
        row = await write(lambda conn: work.approvals.insert(conn, caller.project, new, caller.name))
        return ApprovalOut.of(row)

    @router.get("/approvals", response_model=ApprovalsOut, summary="Approvals, newest first (scope read)")
    def list_all(
        access: Annotated[ReadAccess, Depends(read_access)],
        status: Annotated[Literal["pending", "approved", "rejected", "expired"] | None, Query()] = None,
        project: Annotated[str | None, Query(max_length=200)] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> ApprovalsOut:
        rows = run_read(readable, lambda cur: work.approvals.list_approvals(cur, access.narrow(project), status, limit), timeout_s)
        return ApprovalsOut(approvals=[ApprovalOut.of(r) for r in rows])

    @router.get("/approvals/{approval_id}", response_model=ApprovalOut, summary="One approval (scope ingest or read)")
    def get_one(approval_id: str, caller: Annotated[Principal, Depends(_ingest_or_read)]) -> ApprovalOut:
        row = run_read(readable, lambda cur: work.approvals.get(cur, approval_id, _projects(caller)), timeout_s)
        return found(row, approval_id)

    async def decide(approval_id: str, status: db.Status, caller: Principal, by: str | None,
                     reason: str | None) -> ApprovalOut:
        who = by or caller.name
        try:
            row = await write(lambda conn: work.approvals.decide(conn, approval_id, _projects(caller), status, who, reason))
        except db.NotPending as exc:
            if status == db.Status.EXPIRED:  # the agent asks for the final state: here it is
                return ApprovalOut.of(exc.row)
            raise HTTPException(409, f"approval {approval_id} is already {exc.row.status}"
                                f"{' by ' + exc.row.decided_by if exc.row.decided_by else ''}") from exc
        return found(row, approval_id)

    @router.post("/approvals/{approval_id}/approve", response_model=ApprovalOut,
                 summary="Approve a pending call (scope admin; a write)")
    async def approve(approval_id: str, caller: Annotated[Principal, Depends(require_scope("admin"))],
                      body: DecisionIn | None = None) -> ApprovalOut:
        body = body or DecisionIn()
        return await decide(approval_id, db.Status.APPROVED, caller, body.by, body.reason)

    @router.post("/approvals/{approval_id}/reject", response_model=ApprovalOut,
                 summary="Reject a pending call (scope admin; a write)")
    async def reject(approval_id: str, caller: Annotated[Principal, Depends(require_scope("admin"))],
                     body: DecisionIn | None = None) -> ApprovalOut:
        body = body or DecisionIn()
        return await decide(approval_id, db.Status.REJECTED, caller, body.by, body.reason)

    @router.post("/approvals/{approval_id}/expire", response_model=ApprovalOut,
                 summary="The agent stopped waiting (scope ingest); answers the final state")
    async def expire(approval_id: str, caller: Annotated[Principal, Depends(require_scope("ingest"))],
                     body: DecisionIn | None = None) -> ApprovalOut:
        body = body or DecisionIn()
        return await decide(approval_id, db.Status.EXPIRED, caller, "agent", body.reason)

    return router

