"""ClickHouse form of `ingest.approvals`' table functions: register, read, decide once.

"Decide only while pending" holds as on DuckDB: `decide` runs on the one work thread of the api node
that owns approvals, reads the row and writes its decided version with no other decision in
between, so when an agent's expiry and a reviewer's decision race, the first to reach that thread
wins and the second gets NotPending. A decision is a new version of the row (ReplacingMergeTree
keyed by approval_id). The reads (`get`, `list_approvals`) are the DuckDB module's plain SELECTs,
read FINAL by the ClickHouse cursor.
"""

from __future__ import annotations

import json
import uuid

from ingest.approvals import (
    DECISIONS,
    PENDING,
    ApprovalRow,
    NewApproval,
    NotPending,
    Status,
    _now,
    get,
    list_approvals,
)
from ingest.store.clickhouse.schema_work import APPROVALS
from ingest.store.clickhouse.work.connection import WorkConnection, next_revision

__all__ = ["ApprovalRow", "NewApproval", "NotPending", "Status", "decide", "get", "insert", "list_approvals"]


def insert(conn: WorkConnection, project: str, new: NewApproval, requested_by: str) -> ApprovalRow:
    """Work thread only."""
    approval_id = uuid.uuid4().hex
    conn.insert(APPROVALS, [{
        "approval_id": approval_id, "project": project, "status": PENDING, "tool_name": new.tool,
        "arguments": json.dumps(new.arguments, ensure_ascii=False, default=str), "risk": new.risk,
        "agent": new.agent, "agent_version": new.agent_version, "trace_id": new.trace_id, "call_id": new.call_id,
        "summary": new.summary, "wait_s": new.wait_s, "requested_by": requested_by, "created_at": _now(),
        "revision": next_revision(), "is_deleted": 0,
    }])
    found = get(conn, approval_id, None)
    assert found is not None
    return found


def decide(conn: WorkConnection, approval_id: str, projects: frozenset[str] | None, status: Status,
           by: str, reason: str | None) -> ApprovalRow | None:
    """Work thread only. None when unknown (or not visible); NotPending when already decided."""
    if status not in DECISIONS:
        raise ValueError(f"not a decision: {status}")
    current = get(conn, approval_id, projects)
    if current is None:
        return None
    if current.status != PENDING:
        raise NotPending(current)
    conn.rewrite(APPROVALS, "approval_id = ? AND status = ?", [approval_id, PENDING],
                 {"status": status.value, "decided_at": _now(), "decided_by": by, "reason": reason})
    return get(conn, approval_id, projects)
