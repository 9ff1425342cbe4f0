"""Pending human approvals of agents' risky tool calls: rows of the `approvals` table.

Why in the ingest server: it is the one shared service every agent host and every reviewer
can reach, and it already owns the only DuckDB write connection. Writes run on the store's
writer thread (`SpanStore.run_write`), so "decide only while pending" is a read and an update
with nobody in between: an approval is decided exactly once, and when the agent's expiry and a
reviewer's decision race, whichever reaches the writer first wins and both sides see it.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

import duckdb

from ingest.clock import utcnow as _now

PENDING = "pending"


class Status(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


DECISIONS = frozenset({Status.APPROVED, Status.REJECTED, Status.EXPIRED})

_COLUMNS = (
    "approval_id, project, status, tool_name, arguments, risk, agent, agent_version, trace_id, call_id, "
    "summary, wait_s, requested_by, created_at, decided_at, decided_by, reason"
)


@dataclass(frozen=True)
class ApprovalRow:
    approval_id: str
    project: str
    status: str
    tool: str
    arguments: dict[str, Any]
    risk: str | None
    agent: str | None
    agent_version: str | None
    trace_id: str | None
    call_id: str | None
    summary: str | None
    wait_s: float | None
    requested_by: str | None
    created_at: datetime
    decided_at: datetime | None
    decided_by: str | None
    reason: str | None


@dataclass(frozen=True)
class NewApproval:
    tool: str
    arguments: dict[str, Any]
    risk: str | None = None
    agent: str | None = None
    agent_version: str | None = None
    trace_id: str | None = None
    call_id: str | None = None
    summary: str | None = None
    wait_s: float | None = None


class NotPending(Exception):
    """The approval was already decided; `row` is its current state."""

    def __init__(self, row: ApprovalRow) -> None:
        super().__init__(f"approval {row.approval_id} is already {row.status}")
        self.row = row


def _row(r: tuple) -> ApprovalRow:
    args = r[4]
    try:
        arguments = json.loads(args) if isinstance(args, str) else (args or {})
    except ValueError:
        arguments = {"_raw": args}
    return ApprovalRow(r[0], r[1], r[2], r[3], arguments if isinstance(arguments, dict) else {"_raw": arguments},
                       *r[5:])


def insert(conn: duckdb.DuckDBPyConnection, project: str, new: NewApproval, requested_by: str) -> ApprovalRow:
    """Writer thread only."""
    approval_id = uuid.uuid4().hex
    conn.execute(
        f"INSERT INTO approvals ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL)",
        [approval_id, project, PENDING, new.tool, json.dumps(new.arguments, ensure_ascii=False, default=str),
         new.risk, new.agent, new.agent_version, new.trace_id, new.call_id, new.summary, new.wait_s,
         requested_by, _now()],
    )
    found = get(conn, approval_id, None)
    assert found is not None
    return found


def get(cur: duckdb.DuckDBPyConnection, approval_id: str, projects: frozenset[str] | None) -> ApprovalRow | None:
    """The approval, if it exists and is in `projects` (None: any project)."""
    sql = f"SELECT {_COLUMNS} FROM approvals WHERE approval_id = ?"
    params: list[Any] = [approval_id]
    if projects is not None:
        if not projects:
            return None
        sql += f" AND project IN ({', '.join('?' for _ in projects)})"
        params += sorted(projects)
    rows = cur.execute(sql, params).fetchall()
    return _row(rows[0]) if rows else None


def list_approvals(cur: duckdb.DuckDBPyConnection, projects: frozenset[str] | None, status: str | None,
                   limit: int) -> list[ApprovalRow]:
    """Newest first."""
    clauses, params = ["TRUE"], []
    if projects is not None:
        if not projects:
            return []
        clauses.append(f"project IN ({', '.join('?' for _ in projects)})")
        params += sorted(projects)
    if status is not None:
        clauses.append("status = ?")
        params.append(status)
    rows = cur.execute(
        f"SELECT {_COLUMNS} FROM approvals WHERE {' AND '.join(clauses)} ORDER BY created_at DESC, approval_id "
        "LIMIT ?", [*params, limit],
    ).fetchall()
    return [_row(r) for r in rows]


def decide(conn: duckdb.DuckDBPyConnection, approval_id: str, projects: frozenset[str] | None, status: Status,
           by: str, reason: str | None) -> ApprovalRow | None:
    """Writer thread only. None when unknown (or not visible); NotPending when already decided."""
    if status not in DECISIONS:
        raise ValueError(f"not a decision: {status}")
    current = get(conn, approval_id, projects)
    if current is None:
        return None
    if current.status != PENDING:
        raise NotPending(current)
    conn.execute(
        "UPDATE approvals SET status = ?, decided_at = ?, decided_by = ?, reason = ? "
        "WHERE approval_id = ? AND status = ?",
        [status.value, _now(), by, reason, approval_id, PENDING],
    )
    return get(conn, approval_id, projects)
