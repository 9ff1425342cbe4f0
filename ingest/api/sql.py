"""`POST /api/sql`: one read-only SELECT over the project-scoped views, streamed as JSON, CSV or Arrow.

The query is checked and rewritten by ingest/sql/check.py before anything runs (a refusal is a 400
naming what was refused), the project scope comes from the key (ingest/sql/views.py), and the time,
row and byte limits come from the settings (`sql_*`). The body is read with a cap, so a huge body is
a 413 and never sits in memory whole.

No `from __future__ import annotations`: FastAPI must evaluate the `Depends(read_access)` hints.
"""

import threading
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from ingest.api.access import ReadAccess, principal_read_access
from ingest.api.execute import run_read
from ingest.config import Settings
from ingest.sql.check import Refused, prepare
from ingest.sql.clickhouse import duckdb_type
from ingest.sql.encode import MEDIA_TYPES, encoder_for
from ingest.sql.examples import EXAMPLES
from ingest.sql.functions import ALLOWED_FUNCTIONS
from ingest.sql.run import SqlFailed, SqlLimits, SqlTimeout, Started, StoreUnavailable, start
from ingest.sql.views import VIEWS
from ingest.store.backend import queries_of

Format = Literal["json", "csv", "arrow"]
_ACCEPT = (("application/vnd.apache.arrow.stream", "arrow"), ("text/csv", "csv"), ("application/json", "json"))


class SqlRequest(BaseModel):
    """The body of `POST /api/sql`."""

    model_config = ConfigDict(extra="forbid")

    sql: str = Field(description="One SELECT over the views runs, spans, tool_calls, scores.")
    format: Format | None = Field(None, description="json (default), csv or arrow; else from the Accept header.")
    limit: int | None = Field(None, ge=1, le=10_000_000, description="Most rows wanted (at most sql_max_rows).")
    project: str | None = Field(None, max_length=512, description="Only this project (narrows your key's, never widens).")


def _format(body: SqlRequest, request: Request) -> Format:
    if body.format:
        return body.format
    query_format = request.query_params.get("format")
    if query_format in MEDIA_TYPES:
        return query_format  # type: ignore[return-value]
    accept = request.headers.get("accept", "")
    for media_type, fmt in _ACCEPT:
        if media_type in accept:
            return fmt  # type: ignore[return-value]
    return "json"


async def _read_capped(request: Request, cap: int) -> bytes:
    declared = request.headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > cap:
        raise HTTPException(413, f"body of {declared} bytes is over the {cap}-byte limit (sql_max_query_bytes)")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > cap:
                raise HTTPException(413, f"body is over the {cap}-byte limit (sql_max_query_bytes)")
    except ClientDisconnect:
        raise HTTPException(400, "client disconnected before sending the whole body") from None
    return bytes(body)


def _parse_body(raw: bytes) -> SqlRequest:
    try:
        return SqlRequest.model_validate_json(raw)
    except ValidationError as exc:
        errors = [
            f"{'.'.join(str(p) for p in e.get('loc', ())) or 'body'}: {e.get('msg')}"
            for e in exc.errors(include_url=False, include_input=False)
        ]
        raise HTTPException(422, "; ".join(errors)[:1000] or "invalid body") from None


class ViewColumn(BaseModel):
    name: str
    type: str


class ViewInfo(BaseModel):
    name: str
    doc: str
    columns: list[ViewColumn]


class Example(BaseModel):
    title: str
    sql: str


class SqlCatalog(BaseModel):
    """What a query may use: the views with their columns, the functions, the limits, examples."""

    views: list[ViewInfo]
    functions: list[str]
    examples: list[Example]
    limits: dict[str, float]


def _describe(cursor: Any) -> list[ViewInfo]:
    out = []
    for view in VIEWS:
        if not hasattr(cursor, "sql"):  # ClickHouse: the column types of an empty answer
            prepared = prepare(f"SELECT * FROM {view.name}", frozenset(), 0, 1 << 20, dialect="clickhouse")
            schema = cursor.execute(prepared.sql, prepared.params).fetch_arrow_table().schema
            columns = [ViewColumn(name=f.name, type=duckdb_type(f.name, f.type)) for f in schema]
        else:
            prepared = prepare(f"SELECT * FROM {view.name}", frozenset(), 0, 1 << 20)
            relation = cursor.sql(prepared.sql, params=prepared.params)
            columns = [ViewColumn(name=n, type=str(t)) for n, t in zip(relation.columns, relation.types, strict=True)]
        out.append(ViewInfo(name=view.name, doc=view.doc, columns=columns))
    return out


def build_sql_router(store: Any, settings: Settings, read_access: Callable[..., Any] | None = None) -> APIRouter:
    """The `/sql` route reading through `store.read()` under the `sql_*` limits."""
    read_access = read_access or principal_read_access()
    limits = SqlLimits(
        timeout_s=min(settings.sql_timeout_s, settings.query_timeout_s),
        max_rows=settings.sql_max_rows,
        max_result_bytes=settings.sql_max_result_bytes,
        max_query_bytes=settings.sql_max_query_bytes,
    )
    running = threading.BoundedSemaphore(settings.sql_max_concurrent)
    # the SQL text may be escaped in JSON (up to 6 bytes per character) plus the other fields
    body_cap = 6 * settings.sql_max_query_bytes + 4096
    router = APIRouter(tags=["sql"])

    @router.get("/sql/views", response_model=SqlCatalog, summary="The views, functions and limits of POST /api/sql")
    def get_views(access: Annotated[ReadAccess, Depends(read_access)]) -> SqlCatalog:
        return SqlCatalog(
            views=run_read(store, _describe, settings.query_timeout_s),
            functions=sorted(ALLOWED_FUNCTIONS),
            examples=[Example(title=t, sql=q) for t, q in EXAMPLES],
            limits={"timeout_s": limits.timeout_s, "max_rows": limits.max_rows,
                    "max_result_bytes": limits.max_result_bytes, "max_query_bytes": limits.max_query_bytes},
        )

    @router.post(
        "/sql",
        summary="Run one read-only SELECT over the views runs, spans, tool_calls, scores (JSON, CSV or Arrow IPC)",
        response_class=StreamingResponse,
        responses={200: {"content": {m: {} for m in MEDIA_TYPES.values()}}},
    )
    async def post_sql(request: Request, access: Annotated[ReadAccess, Depends(read_access)]) -> StreamingResponse:
        body = _parse_body(await _read_capped(request, body_cap))
        fmt = _format(body, request)
        max_rows = min(body.limit or limits.max_rows, limits.max_rows)
        query_limits = SqlLimits(limits.timeout_s, max_rows, limits.max_result_bytes, limits.max_query_bytes)
        try:
            prepared = await run_in_threadpool(
                prepare, body.sql, access.narrow(body.project), max_rows, limits.max_query_bytes, None,
                queries_of(store).backend,
            )
        except Refused as exc:
            raise HTTPException(400, f"SQL refused: {exc}") from None
        if not running.acquire(blocking=False):
            raise HTTPException(
                429, f"{settings.sql_max_concurrent} SQL queries are running (sql_max_concurrent): retry shortly",
                headers={"Retry-After": str(settings.retry_after_s)},
            )
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                running.release()

        try:
            started: Started = await run_in_threadpool(start, store, prepared, query_limits, body.sql, release)
        except SqlTimeout:
            release()
            raise HTTPException(
                504, f"the query ran past the time limit of {limits.timeout_s:g} s (sql_timeout_s): "
                "narrow it (a time range on start_time, fewer joins) and retry"
            ) from None
        except SqlFailed as exc:
            release()
            raise HTTPException(400, f"SQL failed: {exc}") from None
        except StoreUnavailable:
            release()
            raise HTTPException(503, "store unavailable, retry shortly", headers={"Retry-After": "1"}) from None
        except BaseException:
            release()
            raise
        encoder = encoder_for(fmt, started.columns, started.types, started.schema)
        headers = {"X-Steplens-Row-Limit": str(max_rows), "Cache-Control": "no-store"}
        return StreamingResponse(started.rows(encoder), media_type=MEDIA_TYPES[fmt], headers=headers)

    return router
