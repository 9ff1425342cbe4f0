"""`/api/alerts` (rules and their state), `/api/alerts/events` (history), `POST /api/alerts/check`.

The router also owns the alert service's lifecycle (its lifespan starts the evaluator with the
HTTP server and stops it before the store closes), so `query_routers` is the only wiring needed.
A key bound to a project sees only rules restricted to its project; `check` needs the admin scope
because it writes alert state and sends notifications. State and history are read through the
store's `alerts` query module (either store); on a node that does not run the alert job (role api)
`check` evaluates from the stored states without recording or notifying (`recorded: false`).
No `from __future__ import annotations`: FastAPI must evaluate the `Depends(...)` hints.
"""

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Query
from pydantic import BaseModel, ConfigDict, Field

from ingest.alerts.rules import AlertRule
from ingest.alerts.service import AlertService
from ingest.alerts.state import FIRING, AlertEvent, AlertState
from ingest.api.access import ReadAccess, principal_read_access
from ingest.api.execute import ReadableStore, run_read
from ingest.api.params import TimeParam
from ingest.auth import Principal, require_scope
from ingest.store.backend import queries_of


def _utc(dt: datetime | None) -> datetime | None:
    return None if dt is None else dt.replace(tzinfo=UTC)


class StateOut(BaseModel):
    subject: str
    status: str
    since: datetime
    last_notified: datetime | None
    last_evaluated: datetime
    value: float | None
    summary: str | None

    @classmethod
    def of(cls, s: AlertState) -> "StateOut":
        return cls(subject=s.subject, status=s.status, since=s.since.replace(tzinfo=UTC),
                   last_notified=_utc(s.last_notified), last_evaluated=s.last_evaluated.replace(tzinfo=UTC),
                   value=s.value, summary=s.summary)


class RuleOut(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    rule: dict[str, Any] = Field(description="The rule as configured (durations in seconds).")
    builtin: bool = Field(False, description="A built-in rule (no [[alerts]] configured; alerts_defaults).")
    firing: bool
    states: list[StateOut]
    last_evaluated: datetime | None
    next_due: datetime | None
    last_error: str | None


class AlertsOut(BaseModel):
    rules: list[RuleOut]
    channels: list[dict[str, str]] = Field(description="Names and kinds only (webhook URLs are secrets).")


class EventOut(BaseModel):
    event_id: str
    time: datetime
    rule: str
    subject: str
    kind: str
    severity: str
    summary: str
    value: float | None
    details: dict[str, Any]
    evidence: list[str] = Field(description="Trace ids; open them with GET /api/traces/{trace_id}.")
    channels: list[str]

    @classmethod
    def of(cls, e: AlertEvent) -> "EventOut":
        return cls(event_id=e.event_id, time=e.time.replace(tzinfo=UTC), rule=e.rule, subject=e.subject,
                   kind=e.kind.value, severity=e.severity, summary=e.summary, value=e.value, details=e.details,
                   evidence=e.evidence, channels=e.channels)


class EventsOut(BaseModel):
    events: list[EventOut]


class CheckOut(BaseModel):
    evaluated: int
    firing: list[dict[str, Any]] = Field(description="Every (rule, subject) firing after this check.")
    events: list[EventOut] = Field(description="Transitions this check caused (firing, renotify, resolved).")
    errors: dict[str, str] = Field(description="Rules that could not be evaluated, with the reason.")
    recorded: bool = Field(True, description="Whether this node recorded the check and sent its notifications; "
                           "false on a node that does not run the alert job (role api): the worker does that.")


def _rule_view(rule: AlertRule) -> dict[str, Any]:
    data = rule.model_dump(mode="json")
    for key in ("window", "baseline", "lookback", "interval", "cooldown"):
        data[key] = getattr(rule, key).total_seconds()
    return data


def _visible(rule: AlertRule, access: ReadAccess) -> bool:
    return access.projects is None or (rule.project is not None and rule.project in access.projects)


def build_alerts_router(
    service: AlertService, store: ReadableStore, read_access: Callable[..., Any] | None = None,
    timeout_s: float | None = None, run_service: bool = True,
) -> APIRouter:
    """Mount under /api. With `run_service`, the app's lifespan starts and stops `service`."""
    read_access = read_access or principal_read_access()
    queries = queries_of(store)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if run_service:
            await asyncio.to_thread(service.start)
        try:
            yield
        finally:
            if run_service:
                await asyncio.to_thread(service.stop)

    router = APIRouter(tags=["alerts"], lifespan=lifespan)

    @router.get("/alerts", response_model=AlertsOut, summary="Alert rules with their current state")
    def get_alerts(access: Annotated[ReadAccess, Depends(read_access)]) -> AlertsOut:
        rules = [r for r in service.rules if _visible(r, access)]
        states = run_read(store, queries.alerts.read_states, timeout_s)
        by_rule: dict[str, list[AlertState]] = {}
        for s in states:
            by_rule.setdefault(s.rule, []).append(s)
        out = []
        for rule in rules:
            st = service.status.get(rule.name)
            mine = by_rule.get(rule.name, [])
            out.append(RuleOut(
                rule=_rule_view(rule), builtin=service.builtin, firing=any(s.status == FIRING for s in mine),
                states=[StateOut.of(s) for s in mine],
                # a node that does not evaluate (role api) knows when the worker last did from the states
                last_evaluated=_utc(st.last_evaluated if st and st.last_evaluated else
                                    max((s.last_evaluated for s in mine), default=None)),
                next_due=_utc(st.next_due) if st else None,
                last_error=st.last_error if st else None,
            ))
        out.sort(key=lambda r: (not r.firing, r.rule["name"]))
        channels = [{"name": "log", "kind": "log"}, *({"name": c.name, "kind": c.kind} for c in service.channels)]
        return AlertsOut(rules=out, channels=channels)

    @router.get("/alerts/events", response_model=EventsOut, summary="Alert history, newest first")
    def get_events(
        access: Annotated[ReadAccess, Depends(read_access)],
        limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
        rule: Annotated[str | None, Query(max_length=200)] = None,
        since: Annotated[TimeParam, Query()] = None,
    ) -> EventsOut:
        names = [r.name for r in service.rules if _visible(r, access)]
        if access.projects is None:
            names = None  # every rule, including ones removed from the config since
        if rule is not None:
            names = [rule] if names is None or rule in names else []
        events = run_read(store, lambda cur: queries.alerts.read_events(cur, limit, names, since), timeout_s)
        return EventsOut(events=[EventOut.of(e) for e in events])

    @router.post("/alerts/check", response_model=CheckOut, summary="Evaluate every rule now (admin)")
    def post_check(principal: Annotated[Principal, Depends(require_scope("admin"))]) -> CheckOut:
        projects = principal.projects
        access = ReadAccess(None if projects is None else frozenset(projects))
        result = service.check(only=lambda rule: _visible(rule, access))
        states = run_read(store, queries.alerts.read_states, timeout_s) if result.recorded else result.states
        mine = {r.name for r in service.rules if _visible(r, access)}
        firing = [
            {"rule": s.rule, **StateOut.of(s).model_dump(mode="json")}
            for s in states if s.status == FIRING and s.rule in mine
        ]
        return CheckOut(evaluated=result.evaluated, firing=firing, events=[EventOut.of(e) for e in result.events],
                        errors=result.errors, recorded=result.recorded)

    return router
