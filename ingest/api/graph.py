"""`GET /api/graph` (the agent graph over the filtered runs) and `GET /api/traces/{trace_id}/graph`
(the same graph for one run). The walk and the figures are ingest/api/graph_build.py.

No `from __future__ import annotations`: FastAPI must evaluate the `Depends(read_access)` hints.
"""

import re
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, Field

from ingest.api.access import ReadAccess
from ingest.api.execute import ReadableStore, run_read
from ingest.api.graph_build import build_graph
from ingest.api.params import CommonParams, TraceParams
from ingest.api.run_filter import run_filter_sql
from ingest.api.spans import filter_or_400, search_503
from ingest.store.backend import queries_of

_TRACE_ID = re.compile(r"^[0-9a-fA-F]{32}$")


class GraphNode(BaseModel):
    id: str = Field(description="`agent:<name>`, `tool:<name>` or `llm:<model>`.")
    kind: str = Field(description="agent, tool or llm.")
    name: str
    calls: int = Field(description="Times it was called (its incoming edges' calls).")
    errors: int
    error_rate: float | None = None
    runs: int = Field(description="Runs it is the top agent of.")
    traces: int = Field(description="Runs it appears in.")


class GraphEdge(BaseModel):
    source: str
    target: str
    calls: int
    errors: int = Field(description="Calls whose callee span failed.")
    error_rate: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = Field(None, description="Of the callee spans' durations.")
    cost_usd: float | None = Field(None, description="Counted LLM and tool calls in the callee's subtree; null: none priced.")
    input_tokens: int = 0
    output_tokens: int = 0
    runs: int
    example_traces: list[str] = Field(description="Trace ids, failed calls first, then the newest.")


class Graph(BaseModel):
    runs: int = Field(description="Runs the graph is built from.")
    runs_matched: int = Field(description="Runs matching the filters (the newest `max_runs` are used).")
    nodes: list[GraphNode]
    edges: list[GraphEdge]


class GraphParams(CommonParams):
    max_runs: int = Field(500, ge=1, le=5000, description="Build from the newest this many matching runs.")
    filter: str | None = Field(None, max_length=4000, description="Filter expression over the run and its spans, "
                               "as on /api/runs (design.md §4 Filter expressions).")


def add_graph_routes(
    router: APIRouter, store: ReadableStore, read_access: Callable[..., Any], timeout_s: float | None
) -> None:
    @router.get("/graph", response_model=Graph,
                summary="Agent graph of the filtered runs: agents, tools, models and who calls whom")
    def get_graph(
        params: Annotated[GraphParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> Graph:
        node = filter_or_400(params.filter, "runs")
        filters = params.to_filters(access)
        index = store.search_index  # type: ignore[attr-defined]

        def read(cur: Any) -> Graph:
            with run_filter_sql(cur, index, node, params.filter, filters.projects, filters.since) as extra:
                runs, matched, lo, hi = queries_of(store).graph.graph_runs(cur, filters, params.max_runs, extra)
            graph = build_graph(runs, queries_of(store).graph.graph_spans(cur, runs, lo, hi))
            return Graph(runs_matched=matched, **graph)

        with search_503():
            return run_read(store, read, timeout_s)

    @router.get("/traces/{trace_id}/graph", response_model=Graph, summary="The agent graph of one run",
                responses={400: {"description": "not a 32-hex-char trace id"}, 404: {"description": "unknown trace"}})
    def get_trace_graph(
        trace_id: str, params: Annotated[TraceParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> Graph:
        if not _TRACE_ID.match(trace_id):
            raise HTTPException(400, f"trace id must be 32 hexadecimal characters, got {len(trace_id)} characters")
        tid = trace_id.lower()

        def read(cur: Any) -> Graph | None:
            runs = queries_of(store).runs.find_runs_by_trace(cur, tid, access.narrow(params.project))
            if not runs:
                return None
            run = runs[0]
            return Graph(runs_matched=1, **build_graph([run], queries_of(store).graph.graph_spans(cur, [run], run["span_start"], run["span_end"])))

        graph = run_read(store, read, timeout_s)
        if graph is None:
            raise HTTPException(404, f"trace {tid} not found")
        return graph
