"""`GET /api/spans`: spans matching a filter expression in a time range, newest first, keyset pages.

No `from __future__ import annotations`: FastAPI must evaluate the `Depends(read_access)` annotations.
"""

import base64
import binascii
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ingest.api.access import ReadAccess
from ingest.api.execute import ReadableStore, run_read
from ingest.api.params import Text, TimeParam
from ingest.filters.check import FilterError, checked_filter
from ingest.filters.compile import span_predicate
from ingest.filters.parse import MAX_FILTER_CHARS
from ingest.queries.spans import SpanKey
from ingest.search.hits import HitTables
from ingest.search.index import IndexUnavailable
from ingest.store.backend import queries_of

FILTER_HELP = (
    'Filter expression, e.g. attributes["gen_ai.tool.name"] = "refund" and cost_usd > 0.01 and search("timeout") '
    "(design.md §4 Filter expressions)."
)


class SpansParams(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    project: Text = Field(None, description="Only this project (can narrow what your key reads, never widen).")
    since: TimeParam = Field(None, description="Spans starting at or after: ISO 8601 or relative (24h, 7d).")
    until: TimeParam = Field(None, description="Spans starting before: ISO 8601 or relative.")
    filter: str | None = Field(None, max_length=MAX_FILTER_CHARS, description=FILTER_HELP)
    limit: int = Field(50, ge=1, le=500)
    cursor: str | None = Field(None, max_length=1024, description="`next` of the previous page.")

    @model_validator(mode="after")
    def _range(self) -> "SpansParams":
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError(f"since ({self.since.isoformat()}) must be before until ({self.until.isoformat()})")
        return self


class SpanRow(BaseModel):
    project: str
    trace_id: str
    span_id: str
    parent_span_id: str | None = None
    name: str
    kind: str
    operation: str
    start_time: datetime
    end_time: datetime
    duration_ms: float
    status: str
    status_message: str | None = None
    service: str | None = None
    agent_name: str | None = None
    agent_version: str | None = None
    model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    tool_name: str | None = None
    error_type: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)


class SpansPage(BaseModel):
    spans: list[SpanRow]
    next: str | None = None
    search_truncated: bool = Field(False, description="A search() term had more matches than it could use.")


def filter_or_400(text: str | None, target: str) -> Any:
    """The checked filter AST (None without a filter); a refused filter is a 400 pointing at the token."""
    if text is None or not text.strip():
        return None
    try:
        return checked_filter(text, target)  # type: ignore[arg-type]
    except FilterError as exc:
        raise HTTPException(400, str(exc)) from exc


@contextmanager
def search_503() -> Iterator[None]:
    """An unreadable search index is a 503 (retry), never an empty answer."""
    try:
        yield
    except IndexUnavailable as exc:
        raise HTTPException(503, str(exc), headers={"Retry-After": "5"}) from exc


def encode_span_cursor(key: SpanKey) -> str:
    raw = json.dumps({"t": key.start_time.isoformat(), "r": key.trace_id, "s": key.span_id, "p": key.project})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_span_cursor(cursor: str) -> SpanKey:
    try:
        payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        key = SpanKey(datetime.fromisoformat(payload["t"]), payload["r"], payload["s"], payload["p"])
        if not all(isinstance(v, str) for v in (key.trace_id, key.span_id, key.project)):
            raise TypeError("ids")
    except (binascii.Error, ValueError, KeyError, TypeError) as exc:
        raise HTTPException(400, "cursor is malformed: pass the `next` value of a previous page unchanged") from exc
    return key


def _row(r: dict[str, Any]) -> SpanRow:
    attributes = r.pop("attributes", None)
    try:
        parsed = json.loads(attributes) if isinstance(attributes, str) else attributes
    except ValueError:
        parsed = None
    return SpanRow(**r, attributes=parsed if isinstance(parsed, dict) else {})


def add_span_routes(
    router: APIRouter, store: ReadableStore, read_access: Callable[..., Any], timeout_s: float | None
) -> None:
    @router.get("/spans", response_model=SpansPage, summary="List spans matching a filter expression")
    def get_spans(
        params: Annotated[SpansParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> SpansPage:
        node = filter_or_400(params.filter, "spans")
        after = decode_span_cursor(params.cursor) if params.cursor else None
        projects = access.narrow(params.project)
        index = store.search_index  # type: ignore[attr-defined]

        def read(cur: Any) -> tuple[Any, bool]:
            hits = HitTables(cur, index, projects, params.since, params.until)
            try:
                predicate = None if node is None else span_predicate(
                    node, params.filter or "", "s", hits, dialect=queries_of(store).backend
                )
                page = queries_of(store).spans.list_spans(cur, projects, params.since, params.until, predicate, params.limit, after)
            finally:
                hits.close()
            return page, hits.truncated

        with search_503():
            page, truncated = run_read(store, read, timeout_s)
        nxt = encode_span_cursor(page.next_key) if page.next_key else None
        return SpansPage(spans=[_row(r) for r in page.rows], next=nxt, search_truncated=truncated)
