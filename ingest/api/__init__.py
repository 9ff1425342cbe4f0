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
from ingest.api.execute import ReadableStore
from ingest.api.overview import add_overview_routes
from ingest.api.runs import add_runs_routes
from ingest.api.traces import add_trace_routes

__all__ = ["ReadAccess", "ReadableStore", "allow_all", "build_query_router", "principal_read_access"]


def build_query_router(
    store: ReadableStore, read_access: Callable[..., Any] | None = None, timeout_s: float | None = None
) -> APIRouter:
    """Routes `/runs`, `/traces/{trace_id}`, `/overview` reading through `store.read()`.

    `timeout_s` only words the 504 message; the limit itself is enforced by the store's cursor.
    """
    if read_access is None:
        read_access = principal_read_access()
    router = APIRouter(tags=["query"])
    add_runs_routes(router, store, read_access, timeout_s)
    add_trace_routes(router, store, read_access, timeout_s)
    add_overview_routes(router, store, read_access, timeout_s)
    return router
