"""`GET /api/models`: per-model LLM call counts, latency and time-to-first-chunk percentiles.

Why an endpoint of its own and not columns of /api/cost: cost rows come from a per-run rollup and
add up across groups; latency percentiles do not, and are read from the LLM spans themselves.
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from ingest.api.access import ReadAccess
from ingest.api.execute import ReadableStore, run_read
from ingest.api.params import CommonParams
from ingest.store.backend import queries_of


class ModelsParams(CommonParams):
    """Filters of `GET /api/models` (the runs whose LLM calls are counted)."""


class ModelStats(BaseModel):
    model: str | None = Field(description="Request model (response model when none was requested).")
    llm_calls: int
    errors: int
    duration_p50_ms: float | None
    duration_p95_ms: float | None
    ttfc_calls: int = Field(description="Calls that reported a time to first chunk (streamed responses).")
    ttfc_p50_ms: float | None = Field(description="Median time to first chunk (gen_ai.response.time_to_first_chunk).")
    ttfc_p95_ms: float | None
    streamed_calls: int = Field(description="Calls with gen_ai.request.stream = true.")
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int


class Models(BaseModel):
    models: list[ModelStats]


def add_model_routes(
    router: APIRouter, store: ReadableStore, read_access: Callable[..., Any], timeout_s: float | None
) -> None:
    @router.get("/models", response_model=Models, summary="Per-model LLM calls: latency and time to first chunk")
    def get_models(
        params: Annotated[ModelsParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> Models:
        filters = params.to_filters(access)
        rows = run_read(store, lambda cur: queries_of(store).models.model_rows(cur, filters), timeout_s)
        return Models(models=[ModelStats(**row) for row in rows])
