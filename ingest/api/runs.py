"""`GET /api/runs`: filtered, sorted, keyset-paged runs, newest first by default.

No `from __future__ import annotations` in the route modules: FastAPI must evaluate the
`Depends(read_access)` annotations, and `read_access` is a closure variable, not a global.
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Response

from ingest.api.access import ReadAccess
from ingest.api.cursor import BadCursor, decode_cursor, encode_cursor
from ingest.api.execute import ReadableStore, run_read
from ingest.api.json_answer import model_response
from ingest.api.models import Run, RunsPage
from ingest.api.params import RunsParams
from ingest.api.spans import filter_or_400, search_503
from ingest.filters.compile import run_predicate
from ingest.queries.run_scope import CHILD_SLACK
from ingest.queries.runs import RunFilters
from ingest.queries.runs import RunsPage as RunsPageRows
from ingest.search.hits import HitTables
from ingest.store.backend import queries_of


def run_filters(params: RunsParams, projects: frozenset[str] | None) -> RunFilters:
    return RunFilters(
        projects=projects,
        since=params.since,
        until=params.until,
        agent=params.agent,
        version=params.version,
        environment=params.environment,
        modes=params.modes(),
        ok=params.ok,
        stop_reason=params.stop_reason,
        model=params.model,
        user=params.user,
        conversation=params.conversation,
        min_cost=params.min_cost,
        min_steps=params.min_steps,
        q=params.q,
        eval_run_id=params.eval_run_id,
        eval_case_id=params.eval_case_id,
        task_id=params.task_id,
        release=params.release,
        cohort=params.cohort,
    )


def add_runs_routes(
    router: APIRouter, store: ReadableStore, read_access: Callable[..., Any], timeout_s: float | None
) -> None:
    @router.get("/runs", response_model=RunsPage, summary="List runs (filter, sort, keyset paging)")
    def get_runs(
        params: Annotated[RunsParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> Response:
        after = None
        if params.cursor:
            try:
                after = decode_cursor(params.cursor, params.sort, params.order)
            except BadCursor as exc:
                raise HTTPException(400, str(exc)) from exc
        node = filter_or_400(params.filter, "runs")
        filters = run_filters(params, access.narrow(params.project))
        index = store.search_index  # type: ignore[attr-defined]
        # a run's spans start after it does: the same bound (with the clock-skew slack) prunes the spans read
        span_since = None if params.since is None else params.since - CHILD_SLACK

        def read(cur: Any) -> RunsPageRows:
            hits = HitTables(cur, index, filters.projects, span_since, None)
            try:
                extra = None if node is None else run_predicate(
                    node, params.filter or "", hits, span_since, dialect=queries_of(store).backend
                )
                page = queries_of(store).runs.list_runs(
                    cur, filters, sort=params.sort, order=params.order, limit=params.limit, after=after, extra=extra
                )
                queries_of(store).scores.latest_values(cur, page.rows)  # each run's `scores` map
                return page
            finally:
                hits.close()

        with search_503():
            page = run_read(store, read, timeout_s)
        nxt = encode_cursor(page.next_key, params.sort, params.order) if page.next_key else None
        # serialized here, in the route's thread: no second hop to validate it again (ingest/api/json_answer.py)
        return model_response(RunsPage(runs=[Run.model_validate(r) for r in page.rows], next=nxt))
