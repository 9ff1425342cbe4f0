"""The read-only query API (design.md §4): routers the server mounts under `/api`.

Usage from the server:

    from ingest.api import build_query_router
    app.include_router(build_query_router(store, read_access=<auth dependency>, timeout_s=...), prefix="/api")

`read_access` is a FastAPI dependency returning `ReadAccess` (which projects the caller may read).
By default it is `principal_read_access()`: the key's project from ingest.auth, needing the `read`
scope (with no keys configured, every project). Pass `allow_all` only where auth does not apply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter

from ingest.api.access import ReadAccess, allow_all, principal_read_access
from ingest.api.budget_advice import add_budget_advice_routes
from ingest.api.cost import add_cost_routes
from ingest.api.diff import add_diff_routes
from ingest.api.execute import ReadableStore
from ingest.api.failures import add_failure_routes
from ingest.api.graph import add_graph_routes
from ingest.api.model_stats import add_model_routes
from ingest.api.overview import add_overview_routes
from ingest.api.prices import add_price_routes
from ingest.api.pricing import table_for
from ingest.api.replanning import add_replanning_routes
from ingest.api.runs import add_runs_routes
from ingest.api.search import add_search_routes
from ingest.api.sessions import add_session_routes
from ingest.api.spans import add_span_routes
from ingest.api.tools import add_tool_routes
from ingest.api.traces import add_trace_routes
from tracer.pricing import PriceTable

__all__ = ["ReadAccess", "ReadableStore", "allow_all", "build_query_router", "principal_read_access"]


def build_query_router(
    store: ReadableStore,
    read_access: Callable[..., Any] | None = None,
    timeout_s: float | None = None,
    prices: PriceTable | None = None,
) -> APIRouter:
    """Routes `/runs`, `/traces/{trace_id}`, `/overview`, `/failures`, `/tools`, `/cost`, `/diff`,
    `/prices`, `/budget-advice`, `/replanning`, `/models`, `/sessions`, `/graph` reading through `store.read()`.

    `timeout_s` only words the 504 message; the limit itself is enforced by the store's cursor.
    `prices` prices carry cost and is shown by `/prices`; by default the table ingest uses (bundled
    plus the store settings' `price_file`).
    """
    if read_access is None:
        read_access = principal_read_access()
    router = APIRouter(tags=["query"])
    add_runs_routes(router, store, read_access, timeout_s)
    add_trace_routes(router, store, read_access, timeout_s)
    add_overview_routes(router, store, read_access, timeout_s)
    add_budget_advice_routes(router, store, read_access, timeout_s)
    price_table = table_for(store, prices)
    add_failure_routes(router, store, read_access, timeout_s)
    add_tool_routes(router, store, read_access, timeout_s, price_table)
    add_cost_routes(router, store, read_access, timeout_s, price_table)
    add_diff_routes(router, store, read_access, timeout_s)
    add_price_routes(router, read_access, price_table)
    add_replanning_routes(router, store, read_access, timeout_s)
    add_model_routes(router, store, read_access, timeout_s)
    add_span_routes(router, store, read_access, timeout_s)
    add_search_routes(router, store, read_access, timeout_s)
    add_session_routes(router, store, read_access, timeout_s)
    add_graph_routes(router, store, read_access, timeout_s)
    return router
