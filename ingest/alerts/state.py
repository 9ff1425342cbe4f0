"""Alert state transitions (firing, re-notify after cooldown, resolved), with no store in them.

Why the transition is a pure function: it is where "cooldown respected" and "resolved once" live,
so it is tested without clocks or threads, and both stores apply the same rules. Where state and
events are kept is each store's `alerts` query module (ingest/queries/alerts.py: one DuckDB
transaction on the writer thread; ingest/store/clickhouse/queries/alerts.py: ReplacingMergeTree
rows), reached through `ingest.store.backend.queries_of(store)`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

FIRING = "firing"
OK = "ok"
_EVENT_NAMESPACE = uuid.UUID("5b1d7c1e-6a0f-4d54-9c55-0f1ea1e57e1d")


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


def event_id(rule: str, subject: str, kind: EventKind, time: datetime) -> str:
    """The id of the event `kind` of (rule, subject) at evaluation `time`: a digest, not a random id,
    so two writes of the same evaluation (a retried insert, a replayed write) are one event."""
    return uuid.uuid5(_EVENT_NAMESPACE, "\x00".join((rule, subject, kind.value, time.isoformat()))).hex


def plan_outcomes(
    previous: dict[str, AlertState], rule: str, severity: str, channels: list[str], cooldown: timedelta,
    outcomes: list[Outcome], now: datetime,
) -> tuple[list[AlertState], list[AlertEvent]]:
    """The next state of every subject of `rule` and the events to notify, from the states stored
    before (`previous`, by subject); subjects absent from `outcomes` count as not firing. Pure: each
    store's alerts module reads `previous` and writes the result its own way."""
    seen = {o.subject for o in outcomes}
    gone = [Outcome(s, False, None, "no longer detected (no matching runs)") for s in previous if s not in seen]
    states: list[AlertState] = []
    events: list[AlertEvent] = []
    for outcome in [*outcomes, *gone]:
        state, kind = transition(previous.get(outcome.subject), outcome, rule, cooldown, now)
        states.append(state)
        if kind is not None:
            events.append(AlertEvent(event_id(rule, outcome.subject, kind, now), now, rule, outcome.subject, kind,
                                     severity, outcome.summary, outcome.value, outcome.details, outcome.evidence,
                                     channels))
    return states, events
