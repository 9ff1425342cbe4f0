"""`GET /api/export`: one table of the caller's project streamed as Parquet, JSON lines or OTLP.

No `from __future__ import annotations` (FastAPI evaluates the `Depends(read_access)` annotation of
a closure variable). The answer's `X-Steplens-Export-Rows` header is the number of rows the export
holds when it starts (what `steplens export` draws its progress bar against).
"""

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ingest.api.access import ReadAccess, principal_read_access
from ingest.api.execute import run_read
from ingest.api.params import Text, TimeParam
from ingest.export.formats import MEDIA_TYPES, SUFFIXES, Format
from ingest.export.stream import PAGE_ROWS, ExportRequest, chunks, prepare
from ingest.export.tables import SPANS, TABLES

ROWS_HEADER = "X-Steplens-Export-Rows"


class ExportParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    table: Literal["runs", "spans", "scores"] = Field("spans", description="What to export.")
    format: Format = Field(Format.JSONL, description="parquet, jsonl or otlp (OTLP/JSON lines; spans only).")
    project: Text = Field(None, description="Only this project (narrows your key's, never widens).")
    since: TimeParam = Field(None, description="Rows at or after: ISO 8601 or relative (7d). Runs by start, "
                             "spans by start, scores by created_at.")
    until: TimeParam = Field(None, description="Rows before: ISO 8601 or relative.")


def build_export_router(store: Any, read_access: Callable[..., Any] | None = None,
                        timeout_s: float | None = None, page_rows: int = PAGE_ROWS) -> APIRouter:
    """The `/export` route; each page (`page_rows` rows) is its own time-limited read (ingest/export/tables.py)."""
    read_access = read_access or principal_read_access()
    router = APIRouter(tags=["export"])

    @router.get(
        "/export",
        summary="Stream a table (runs, spans, scores) of your project as Parquet, JSON lines or OTLP",
        response_class=StreamingResponse,
        responses={200: {"content": {m: {} for m in set(MEDIA_TYPES.values())}}},
    )
    async def get_export(
        params: Annotated[ExportParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> StreamingResponse:
        table = TABLES[params.table]
        if params.format is Format.OTLP and table is not SPANS:
            raise HTTPException(422, "format otlp exports spans only: use table=spans (runs and scores: parquet or jsonl)")
        request = ExportRequest(table, params.format, access.narrow(params.project), params.since, params.until)
        prepared = await run_in_threadpool(run_read, store, lambda cur: prepare(cur, request, store), timeout_s)
        filename = f"{table.name}{SUFFIXES[params.format]}"
        headers = {
            ROWS_HEADER: str(prepared.rows),
            "Content-Disposition": f'attachment; filename="{filename}"',
            "Cache-Control": "no-store",
        }
        return StreamingResponse(chunks(store, prepared, page_rows), media_type=MEDIA_TYPES[params.format], headers=headers)

    return router
