"""`GET /api/sessions` and `GET /api/sessions/{session_id}`: runs grouped by conversation id.

The list is keyset-paged, most recently active session first; one session answers its runs in
order (its turns) with per-turn and total tokens, cost, failures and duration, its users, and a
transcript line per turn (ingest/api/transcript.py). Both read only the caller's projects: a
session id of another project is a 404, like an unknown one.

No `from __future__ import annotations`: FastAPI must evaluate the `Depends(read_access)` hints.
"""

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, Field, field_validator

from ingest.api.access import ReadAccess
from ingest.api.execute import ReadableStore, run_read
from ingest.api.params import CommonParams, Text
from ingest.api.run_filter import run_filter_sql
from ingest.api.spans import filter_or_400, search_503
from ingest.api.transcript import turn_text
from ingest.queries.sessions import SessionFilters, SessionKey
from ingest.store.backend import queries_of

MAX_TURNS = 1000  # one session's answer; `turns_total` says when there are more


def _utc(value: Any) -> Any:
    return value.replace(tzinfo=UTC) if isinstance(value, datetime) and value.tzinfo is None else value


class SessionTotals(BaseModel):
    """Sums over a session's runs (its turns)."""

    runs: int
    start_time: datetime | None = None
    end_time: datetime | None = Field(None, description="When its last run ended.")
    duration_ms: float | None = Field(None, description="From its first run's start to its last run's end.")
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = Field(None, description="null: none of its runs could be priced.")
    steps: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    failures: int = Field(0, description="Runs with ok = false.")
    users: list[str] = Field(default_factory=list, description="user.id / enduser.id of its runs, sorted.")
    agents: list[str] = Field(default_factory=list)

    @field_validator("start_time", "end_time", mode="before")
    @classmethod
    def _times(cls, v: Any) -> Any:
        return _utc(v)


class SessionSummary(SessionTotals):
    session_id: str
    project: str
    last_start: datetime | None = Field(None, description="Its latest run's start: the list's order.")

    @field_validator("last_start", mode="before")
    @classmethod
    def _last(cls, v: Any) -> Any:
        return _utc(v)


class SessionsPage(BaseModel):
    sessions: list[SessionSummary]
    next: str | None = Field(description="Opaque cursor for the next page; null on the last page.")


class Turn(BaseModel):
    """One run of the session, in start order, with what was said and answered."""

    turn: int = Field(description="1-based position in the session.")
    trace_id: str
    agent: str | None = None
    version: str | None = None
    mode: str | None = None
    user_id: str | None = None
    start_time: datetime | None = None
    duration_ms: float | None = None
    ok: bool | None = None
    stop_reason: str | None = None
    steps: int | None = None
    llm_calls: int | None = None
    tool_calls: int | None = None
    tool_errors: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    input: str | None = Field(None, description="The user's message (run task, top span input, first user message).")
    output: str | None = Field(None, description="The agent's answer (run answer, top span output, last reply).")

    @field_validator("start_time", mode="before")
    @classmethod
    def _times(cls, v: Any) -> Any:
        return _utc(v)


class Session(SessionTotals):
    session_id: str
    project: str
    turns: list[Turn]
    turns_total: int = Field(description=f"Runs in the session; `turns` holds the first {MAX_TURNS}.")


class SessionsParams(CommonParams):
    user: Text = Field(None, description="Sessions with at least one run by this user id.")
    filter: str | None = Field(None, max_length=4000, description="Sessions with at least one run matching this "
                               "filter expression, as on /api/runs (design.md §4 Filter expressions).")
    limit: int = Field(50, ge=1, le=1000)
    cursor: str | None = Field(None, max_length=4096, description="`next` of the previous page.")


def _encode(key: SessionKey) -> str:
    raw = json.dumps({"v": key.last_start.isoformat(), "s": key.session_id, "p": key.project}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(cursor: str) -> SessionKey:
    try:
        payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        key = SessionKey(datetime.fromisoformat(payload["v"]), payload["s"], payload["p"])
        if not isinstance(key.session_id, str) or not isinstance(key.project, str):
            raise ValueError("bad ids")
        return key
    except (binascii.Error, ValueError, KeyError, TypeError) as exc:
        raise HTTPException(400, "cursor is malformed: pass the `next` value of a previous page unchanged") from exc


def _session(session_id: str, project: str, rows: list[dict[str, Any]], total: int,
             content: dict[str, dict[str, Any]]) -> Session:
    turns = []
    for i, row in enumerate(rows, start=1):
        said, answered = turn_text(content[row["trace_id"]])
        turns.append(Turn(turn=i, input=said, output=answered,
                          **{k: v for k, v in row.items() if k in Turn.model_fields}))  # fmt: skip
    starts = [r["start_time"] for r in rows if r["start_time"]]
    ends = [r["end_time"] or r["start_time"] for r in rows if r["end_time"] or r["start_time"]]
    costs = [r["cost_usd"] for r in rows if r["cost_usd"] is not None]
    start, end = (min(starts), max(ends)) if starts and ends else (None, None)
    return Session(
        session_id=session_id, project=project, turns=turns, turns_total=total, runs=len(rows),
        start_time=start, end_time=end,
        duration_ms=(end - start).total_seconds() * 1000 if start and end else None,
        input_tokens=sum(r["input_tokens"] or 0 for r in rows), output_tokens=sum(r["output_tokens"] or 0 for r in rows),
        cost_usd=sum(costs) if costs else None, steps=sum(r["steps"] or 0 for r in rows),
        llm_calls=sum(r["llm_calls"] or 0 for r in rows), tool_calls=sum(r["tool_calls"] or 0 for r in rows),
        tool_errors=sum(r["tool_errors"] or 0 for r in rows), failures=sum(1 for r in rows if r["ok"] is False),
        users=sorted({r["user_id"] for r in rows if r["user_id"]}), agents=sorted({r["agent"] for r in rows if r["agent"]}),
    )  # fmt: skip


def add_session_routes(
    router: APIRouter, store: ReadableStore, read_access: Callable[..., Any], timeout_s: float | None
) -> None:
    @router.get("/sessions", response_model=SessionsPage,
                summary="Sessions: runs grouped by conversation id, most recently active first")
    def get_sessions(
        params: Annotated[SessionsParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> SessionsPage:
        after = _decode(params.cursor) if params.cursor else None
        node = filter_or_400(params.filter, "runs")
        common = params.to_filters(access)
        filters = SessionFilters(**asdict(common), user=params.user)
        index = store.search_index  # type: ignore[attr-defined]

        def read(cur: Any) -> tuple[list[dict[str, Any]], SessionKey | None]:
            with run_filter_sql(cur, index, node, params.filter, filters.projects, filters.since) as extra:
                return queries_of(store).sessions.list_sessions(cur, filters, params.limit, after, extra)

        with search_503():
            rows, nxt = run_read(store, read, timeout_s)
        return SessionsPage(sessions=[SessionSummary.model_validate(r) for r in rows],
                            next=_encode(nxt) if nxt else None)  # fmt: skip

    @router.get("/sessions/{session_id:path}", response_model=Session,
                summary="One session: its runs in order with per-turn totals and the transcript",
                responses={404: {"description": "no such session in the projects this key reads"}})
    def get_session(
        session_id: str, params: Annotated[CommonParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> Session:
        if len(session_id) > 512:
            raise HTTPException(422, "session_id is over 512 characters")
        filters = params.to_filters(access)

        def read(cur: Any) -> Session | None:
            project, rows, total = queries_of(store).sessions.session_turns(cur, session_id, filters, MAX_TURNS)
            if project is None:
                return None
            return _session(session_id, project, rows, total, queries_of(store).sessions.turn_content(cur, project, rows))

        found = run_read(store, read, timeout_s)
        if found is None:
            raise HTTPException(404, f"session {session_id!r} not found")
        return found
