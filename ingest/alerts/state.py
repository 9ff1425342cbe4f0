"""Alert state transitions (firing, re-notify after cooldown, resolved) and their DuckDB persistence.

Why the transition is a pure function: it is where "cooldown respected" and "resolved once" live,
so it is tested without clocks or threads. Why `apply_outcomes` takes a connection: it runs on the
store's single writer thread (SpanStore.run_write), one transaction per rule evaluation, so state
and history never disagree and never race the span loader.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

import duckdb

FIRING = "firing"
OK = "ok"


class EventKind(StrEnum):
    FIRING = "firing"
    RENOTIFY = "renotify"
    RESOLVED = "resolved"


@dataclass(frozen=True)
class Outcome:
    """What one evaluation found for one subject (an agent, or '*' for all of them)."""

    subject: str
    firing: bool
    value: float | None
    summary: str
    details: dict[str, Any] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class AlertState:
    rule: str
    subject: str
    status: str  # firing | ok
    since: datetime
    last_notified: datetime | None
    last_evaluated: datetime
    value: float | None
    summary: str | None


@dataclass(frozen=True)
class AlertEvent:
    event_id: str
    time: datetime
    rule: str
    subject: str
    kind: EventKind
    severity: str
    summary: str
    value: float | None
    details: dict[str, Any]
    evidence: list[str]
    channels: list[str]


def transition(
    prev: AlertState | None, outcome: Outcome, rule: str, cooldown: timedelta, now: datetime
) -> tuple[AlertState, EventKind | None]:
    """The next state of (rule, subject) and the event to notify, if any."""
    was_firing = prev is not None and prev.status == FIRING
    if outcome.firing and not was_firing:
        return AlertState(rule, outcome.subject, FIRING, now, now, now, outcome.value, outcome.summary), EventKind.FIRING
    if outcome.firing:
        assert prev is not None
        due = prev.last_notified is None or now - prev.last_notified >= cooldown
        state = replace(prev, last_evaluated=now, value=outcome.value, summary=outcome.summary,
                        last_notified=now if due else prev.last_notified)
        return state, EventKind.RENOTIFY if due else None
    if was_firing:
        assert prev is not None
        return replace(prev, status=OK, since=now, last_evaluated=now, value=outcome.value,
                       summary=outcome.summary), EventKind.RESOLVED
    since = prev.since if prev is not None else now
    last = prev.last_notified if prev is not None else None
    return AlertState(rule, outcome.subject, OK, since, last, now, outcome.value, outcome.summary), None


_STATE_COLUMNS = "rule, subject, status, since, last_notified, last_evaluated, value, summary"


def read_states(cur: duckdb.DuckDBPyConnection, rule: str | None = None) -> list[AlertState]:
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
    """Transition every subject of `rule` (subjects absent from `outcomes` count as not firing),
    persist states and events in one transaction, return the events to notify."""
    conn.execute("BEGIN TRANSACTION")
    try:
        previous = {s.subject: s for s in read_states(conn, rule)}
        seen = {o.subject for o in outcomes}
        gone = [Outcome(s, False, None, "no longer detected (no matching runs)") for s in previous if s not in seen]
        events: list[AlertEvent] = []
        for outcome in [*outcomes, *gone]:
            state, kind = transition(previous.get(outcome.subject), outcome, rule, cooldown, now)
            conn.execute("DELETE FROM alert_state WHERE rule = ? AND subject = ?", [rule, outcome.subject])
            conn.execute(
                f"INSERT INTO alert_state ({_STATE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [state.rule, state.subject, state.status, state.since, state.last_notified, state.last_evaluated,
                 state.value, state.summary],
            )
            if kind is None:
                continue
            event = AlertEvent(uuid.uuid4().hex, now, rule, outcome.subject, kind, severity, outcome.summary,
                               outcome.value, outcome.details, outcome.evidence, channels)
            conn.execute(
                "INSERT INTO alert_events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [event.event_id, event.time, event.rule, event.subject, event.kind.value, event.severity,
                 event.summary, event.value, json.dumps(event.details, default=str), event.evidence, event.channels],
            )
            events.append(event)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return events


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
        "SELECT event_id, time, rule, subject, kind, severity, summary, value, details, evidence, channels "
        f"FROM alert_events WHERE {' AND '.join(clauses)} ORDER BY time DESC, event_id LIMIT ?",
        [*params, limit],
    )
    out = []
    for r in cur.fetchall():
        details = json.loads(r[8]) if r[8] else {}
        out.append(AlertEvent(r[0], r[1], r[2], r[3], EventKind(r[4]), r[5], r[6], r[7], details, list(r[9] or []),
                              list(r[10] or [])))
    return out
