"""501 answers for the API parts a store does not implement yet (e.g. alerts on ClickHouse).

Why a router instead of leaving them unmounted: a 404 reads as a wrong URL; 501 with the store's
name says the endpoint exists and what to do (use the duckdb store for it, or wait for the port).
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

# First path segments under /api served by routers whose reads or writes are DuckDB-only so far
# (none now: every router runs on both stores; a part ported later starts here).
DUCKDB_ONLY: tuple[str, ...] = ()


def build_not_available_router(store_name: str, segments: tuple[str, ...] = DUCKDB_ONLY) -> APIRouter:
    router = APIRouter(tags=["not available"])

    def refuse() -> None:
        raise HTTPException(501, f"not available on the {store_name} store yet: run this endpoint on store=duckdb")

    for segment in segments:
        methods = ["GET", "POST", "PUT", "DELETE", "PATCH"]
        router.add_api_route(f"/{segment}", refuse, methods=methods, include_in_schema=False)
        router.add_api_route(f"/{segment}/{{rest:path}}", refuse, methods=methods, include_in_schema=False)
    return router
