"""ClickHouse form of `ingest.queries.alerts`: alert state and history, and recording an evaluation.

Same functions and answers as DuckDB's. Why no transaction is needed: an evaluation reads the
previous states (FINAL: the latest per (rule, subject)), applies the shared transitions
(`ingest.alerts.state.plan_outcomes`) and inserts the new states, then the events, each in one
block. The tables (schema_alerts.py) make a repeated write harmless: the same evaluation written
twice is the same rows (block deduplication drops the second, FINAL collapses it otherwise) and the
same event ids. States go in before events, so a crash between the two loses at most a history
row, never re-fires: the restarted worker reads the firing state and stays quiet.
Only the node that runs the alert job records (ingest/jobs.py), so evaluations never race.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from ingest.alerts.state import AlertEvent, AlertState, Outcome, plan_outcomes
from ingest.queries.alerts import _EVENT_COLUMNS, _STATE_COLUMNS, event_of

__all__ = ["read_events", "read_states", "record"]

_TS = pa.timestamp("us")
_STATE_SCHEMA = pa.schema([
    ("rule", pa.string()), ("subject", pa.string()), ("status", pa.string()), ("since", _TS),
    ("last_notified", _TS), ("last_evaluated", _TS), ("value", pa.float64()), ("summary", pa.string()),
    ("revision", pa.uint64()),
])
_EVENT_SCHEMA = pa.schema([
    ("event_id", pa.string()), ("time", _TS), ("rule", pa.string()), ("subject", pa.string()),
    ("kind", pa.string()), ("severity", pa.string()), ("summary", pa.string()), ("value", pa.float64()),
    ("details", pa.string()), ("evidence", pa.list_(pa.string())), ("channels", pa.list_(pa.string())),
])


def read_states(cur: Any, rule: str | None = None) -> list[AlertState]:
    """The current state of every (rule, subject), or of `rule`'s subjects; by rule, then subject."""
    return [state for state, _ in _states_with_revisions(cur, rule)]


def _states_with_revisions(cur: Any, rule: str | None) -> list[tuple[AlertState, int]]:
    sql = f"SELECT {_STATE_COLUMNS}, revision FROM alert_state FINAL"
    params: list[object] = []
    if rule is not None:
        sql += " WHERE rule = ?"
        params.append(rule)
    cur.execute(sql + " ORDER BY rule ASC, subject ASC", params)
    return [(AlertState(*row[:-1]), int(row[-1])) for row in cur.fetchall()]


def read_events(cur: Any, limit: int, rules: list[str] | None = None, since: datetime | None = None) -> list[AlertEvent]:
    """Newest first; `rules` restricts to those rule names (an empty list yields nothing)."""
    clauses, params = ["true"], []
    if rules is not None:
        if not rules:
            return []
        clauses.append(f"rule IN ({', '.join('?' for _ in rules)})")
        params.extend(rules)
    if since is not None:
        clauses.append("time >= ?")
        params.append(since)
    cur.execute(
        f"SELECT {_EVENT_COLUMNS} FROM alert_events FINAL WHERE {' AND '.join(clauses)} "
        "ORDER BY time DESC, event_id ASC LIMIT ?",
        [*params, limit],
    )
    return [event_of(r) for r in cur.fetchall()]


def _state_rows(states: list[AlertState], revisions: dict[str, int]) -> pa.Table:
    """The rows of `states`, each one revision above the stored state of its subject (`revisions`)."""
    return pa.Table.from_pylist([
        {"rule": s.rule, "subject": s.subject, "status": s.status, "since": s.since, "last_notified": s.last_notified,
         "last_evaluated": s.last_evaluated, "value": s.value, "summary": s.summary,
         "revision": revisions.get(s.subject, 0) + 1} for s in states
    ], schema=_STATE_SCHEMA)


def _event_rows(events: list[AlertEvent]) -> pa.Table:
    return pa.Table.from_pylist([
        {"event_id": e.event_id, "time": e.time, "rule": e.rule, "subject": e.subject, "kind": e.kind.value,
         "severity": e.severity, "summary": e.summary, "value": e.value,
         "details": json.dumps(e.details, default=str, sort_keys=True), "evidence": e.evidence,
         "channels": e.channels} for e in events
    ], schema=_EVENT_SCHEMA)


def record(
    store: Any, rule: str, severity: str, channels: list[str], cooldown: timedelta, outcomes: list[Outcome],
    now: datetime,
) -> list[AlertEvent]:
    """Record one evaluation of `rule` (states, then events); the events to notify."""
    with store.read() as cur:
        stored = _states_with_revisions(cur, rule)
        previous = {s.subject: s for s, _ in stored}
        states, events = plan_outcomes(previous, rule, severity, channels, cooldown, outcomes, now)
        if states:
            cur.insert("alert_state", _state_rows(states, {s.subject: r for s, r in stored}))
        if events:
            cur.insert("alert_events", _event_rows(events))
    return events
