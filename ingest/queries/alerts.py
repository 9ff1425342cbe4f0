"""DuckDB's alert state and history: read them, and record one rule evaluation.

Why `record` runs on the store's single writer thread (SpanStore.run_write), one transaction per
rule evaluation: the previous states are read and the new ones written in the same transaction, so
state and history never disagree and never race the span loader. The transitions themselves are
the shared pure rules of `ingest.alerts.state`.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import duckdb

from ingest.alerts.state import AlertEvent, AlertState, EventKind, Outcome, plan_outcomes

WRITE_TIMEOUT_S = 30.0
_STATE_COLUMNS = "rule, subject, status, since, last_notified, last_evaluated, value, summary"
_EVENT_COLUMNS = "event_id, time, rule, subject, kind, severity, summary, value, details, evidence, channels"


def read_states(cur: duckdb.DuckDBPyConnection, rule: str | None = None) -> list[AlertState]:
    """The current state of every (rule, subject), or of `rule`'s subjects; by rule, then subject."""
    sql = f"SELECT {_STATE_COLUMNS} FROM alert_state"
    params: list[object] = []
    if rule is not None:
        sql += " WHERE rule = ?"
        params.append(rule)
    cur.execute(sql + " ORDER BY rule, subject", params)
    return [AlertState(*row) for row in cur.fetchall()]


def apply_outcomes(
    conn: duckdb.DuckDBPyConnection, rule: str, severity: str, channels: list[str], cooldown: timedelta,
    outcomes: list[Outcome], now: datetime,
) -> list[AlertEvent]:
    """Transition every subject of `rule`, persist states and events in one transaction, return the
    events to notify (on the writer thread: SpanStore.run_write)."""
    conn.execute("BEGIN TRANSACTION")
    try:
        previous = {s.subject: s for s in read_states(conn, rule)}
        states, events = plan_outcomes(previous, rule, severity, channels, cooldown, outcomes, now)
        for state in states:
            conn.execute("DELETE FROM alert_state WHERE rule = ? AND subject = ?", [rule, state.subject])
            conn.execute(
                f"INSERT INTO alert_state ({_STATE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [state.rule, state.subject, state.status, state.since, state.last_notified, state.last_evaluated,
                 state.value, state.summary],
            )
        for event in events:
            conn.execute(
                f"INSERT INTO alert_events ({_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [event.event_id, event.time, event.rule, event.subject, event.kind.value, event.severity,
                 event.summary, event.value, json.dumps(event.details, default=str), event.evidence, event.channels],
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return events


def record(
    store: Any, rule: str, severity: str, channels: list[str], cooldown: timedelta, outcomes: list[Outcome],
    now: datetime,
) -> list[AlertEvent]:
    """Record one evaluation of `rule` through the store's writer; the events to notify."""
    future = store.run_write(lambda conn: apply_outcomes(conn, rule, severity, channels, cooldown, outcomes, now))
    return future.result(WRITE_TIMEOUT_S)  # type: ignore[no-any-return]


def read_events(
    cur: duckdb.DuckDBPyConnection, limit: int, rules: list[str] | None = None, since: datetime | None = None
) -> list[AlertEvent]:
    """Newest first; `rules` restricts to those rule names (an empty list yields nothing)."""
    clauses, params = ["TRUE"], []
    if rules is not None:
        if not rules:
            return []
        clauses.append(f"rule IN ({', '.join('?' for _ in rules)})")
        params.extend(rules)
    if since is not None:
        clauses.append("time >= ?")
        params.append(since)
    cur.execute(
        f"SELECT {_EVENT_COLUMNS} FROM alert_events WHERE {' AND '.join(clauses)} ORDER BY time DESC, event_id LIMIT ?",
        [*params, limit],
    )
    return [event_of(r) for r in cur.fetchall()]


def event_of(r: tuple[Any, ...]) -> AlertEvent:
    """An AlertEvent from a row of `_EVENT_COLUMNS` (details as JSON text; both stores)."""
    details = json.loads(r[8]) if r[8] else {}
    return AlertEvent(r[0], r[1], r[2], r[3], EventKind(r[4]), r[5], r[6], r[7], details, list(r[9] or []),
                      list(r[10] or []))
