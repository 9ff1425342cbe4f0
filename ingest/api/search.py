"""Full-text search: `GET /api/search` (ranked spans with highlighted snippets), `GET /api/search/status`
(the index's lag) and `POST /api/search/reindex` (operator: rebuild the index from the stored spans).

No `from __future__ import annotations`: FastAPI must evaluate the `Depends(read_access)` annotations.
"""

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, ConfigDict, Field

from ingest.api.access import ReadAccess
from ingest.api.execute import ReadableStore, run_read
from ingest.api.params import Text, TimeParam
from ingest.api.spans import filter_or_400, search_503
from ingest.auth import Principal, require_scope
from ingest.filters.compile import span_predicate
from ingest.filters.parse import MAX_FILTER_CHARS
from ingest.search.hits import HitTables
from ingest.search.index import Hit, SearchIndex, documents_in, from_us, segments
from ingest.search.indexer import META_BUILT_AT, META_REBUILD_NEXT
from ingest.store.backend import queries_of

# Candidates read from the index per result asked: several fields of one span can match, and a
# filter drops some.
CANDIDATES_PER_RESULT = 5
MAX_CANDIDATES = 2000


class SearchParams(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    q: str = Field(min_length=1, max_length=500, description="Words to find (all of them), in any content field.")
    project: Text = Field(None, description="Only this project (can narrow what your key reads, never widen).")
    since: TimeParam = Field(None, description="Spans starting at or after: ISO 8601 or relative (24h, 7d).")
    until: TimeParam = Field(None, description="Spans starting before: ISO 8601 or relative.")
    filter: str | None = Field(None, max_length=MAX_FILTER_CHARS, description="Filter expression over the spans.")
    limit: int = Field(20, ge=1, le=100)


class Segment(BaseModel):
    text: str
    match: bool


class SearchResult(BaseModel):
    project: str
    trace_id: str
    span_id: str
    name: str
    operation: str
    agent_name: str | None = None
    tool_name: str | None = None
    model: str | None = None
    status: str
    error_type: str | None = None
    start_time: datetime
    duration_ms: float
    field: str = Field(description="Where it matched: an attribute key, status_message or events.")
    score: float = Field(description="BM25 relevance, higher is better.")
    snippet: list[Segment] = Field(description="The matching passage; `match` pieces are the found words.")


class IndexStatus(BaseModel):
    pending_spans: int = Field(description="Stored spans (of your projects) not yet searchable.")
    oldest_pending: datetime | None = None
    lag_s: float = Field(description="Age of the oldest span waiting for the index (0: current).")
    rebuilding: bool = False
    rebuilt_through: datetime | None = Field(None, description="While rebuilding: spans up to here are indexed.")
    built_at: datetime | None = None
    documents: int | None = Field(
        None, description="Documents in the whole index (operator keys only; null while an index made by an "
        "earlier version has not been counted yet).")
    error: str | None = Field(None, description="The indexer's last failure, until it recovers.")


class SearchAnswer(BaseModel):
    results: list[SearchResult]
    index: IndexStatus


class ReindexAnswer(BaseModel):
    started: bool
    index: IndexStatus


def index_status(store: Any, cur: Any, projects: frozenset[str] | None) -> IndexStatus:
    count, oldest = queries_of(store).search.lag(cur, projects)
    index: SearchIndex = store.search_index
    meta = index.meta()
    now = datetime.now(UTC).replace(tzinfo=None)
    rebuilding = META_REBUILD_NEXT in meta
    return IndexStatus(
        pending_spans=count,
        oldest_pending=oldest,
        lag_s=max(0.0, (now - oldest).total_seconds()) if oldest else 0.0,
        rebuilding=rebuilding,
        rebuilt_through=from_us(int(meta[META_REBUILD_NEXT])) if rebuilding else None,
        built_at=datetime.fromisoformat(meta[META_BUILT_AT]) if META_BUILT_AT in meta else None,
        documents=documents_in(meta) if projects is None else None,  # a counter: no count(*)
        error=store.search_indexer.failed,
    )


def _best_per_span(hits: list[Hit]) -> list[Hit]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for h in hits:  # best first
        key = (h.project, h.trace_id, h.span_id)
        if key not in seen:
            seen.add(key)
            out.append(h)
    return out


def add_search_routes(
    router: APIRouter, store: ReadableStore, read_access: Callable[..., Any], timeout_s: float | None
) -> None:
    @router.get("/search", response_model=SearchAnswer, summary="Full-text search over span content, ranked")
    def get_search(
        params: Annotated[SearchParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> SearchAnswer:
        node = filter_or_400(params.filter, "spans")
        projects = access.narrow(params.project)
        index: SearchIndex = store.search_index  # type: ignore[attr-defined]
        wanted = min(MAX_CANDIDATES, params.limit * CANDIDATES_PER_RESULT * (4 if node is not None else 1))
        hits: list[Hit] = []

        def read(cur: Any) -> tuple[dict, IndexStatus]:
            # inside the read, so a store whose index is its own tables (ClickHouse) answers its
            # timeouts and outages like every read (504/503)
            hits.extend(_best_per_span(index.search(params.q, projects, params.since, params.until, limit=wanted)))
            tables = HitTables(cur, index, projects, params.since, params.until)
            try:
                predicate = None if node is None else span_predicate(
                    node, params.filter or "", "s", tables, dialect=queries_of(store).backend
                )
                return queries_of(store).search.span_facts(cur, hits, predicate), index_status(store, cur, projects)
            finally:
                tables.close()

        with search_503():
            facts, status = run_read(store, read, timeout_s)
        results = []
        for h in hits:
            row = facts.get((h.project, h.trace_id, h.span_id))
            if row is None:
                continue
            results.append(SearchResult(**row, field=h.field, score=h.score, snippet=segments(h.snippet)))
            if len(results) >= params.limit:
                break
        return SearchAnswer(results=results, index=status)

    @router.get("/search/status", response_model=IndexStatus, summary="How far the search index lags the spans")
    def get_status(
        access: Annotated[ReadAccess, Depends(read_access)], project: Text = Query(None)
    ) -> IndexStatus:
        projects = access.narrow(project)
        return run_read(store, lambda cur: index_status(store, cur, projects), timeout_s)

    @router.post("/search/reindex", response_model=ReindexAnswer, summary="Rebuild the search index (operator)")
    def post_reindex(principal: Annotated[Principal, Depends(require_scope("operator"))]) -> ReindexAnswer:
        indexer = store.search_indexer  # type: ignore[attr-defined]
        try:
            indexer.request_rebuild(store).result(timeout=60)
        except TimeoutError as exc:
            raise HTTPException(503, "the writer is busy: retry the reindex shortly", headers={"Retry-After": "5"}) from exc
        except ConnectionError as exc:  # the store cannot be reached (ClickHouse down)
            raise HTTPException(503, str(exc), headers={"Retry-After": "5"}) from exc
        return ReindexAnswer(started=True, index=run_read(store, lambda cur: index_status(store, cur, None), timeout_s))

