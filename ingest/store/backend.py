"""The storage seam: what the receiver/writer and the query API need from a store, and the factory.

Why a seam (Jaeger's storage plugins): one machine runs DuckDB, a fleet runs ClickHouse, and the
API, normalization, analytics and dashboards must not know which. Each backend keeps its own SQL:
DuckDB's read queries are the modules of `ingest.queries`, ClickHouse's the modules of the same
names under `ingest.store.clickhouse.queries`, with the same functions and signatures. The API
calls them through `queries_of(store)`, so a query ClickHouse does not have yet answers 501
("not available on the clickhouse store yet"), never a 500 or DuckDB SQL sent to ClickHouse.

Writer side (both stores): `submit*` make a request durable in the spool (the 200), the store's
writer loads each spool record idempotently, keeps runs current (upkeep) and ages data out
(retention). Reader side: `read()` yields a time-limited DB-API cursor, `queries` the namespace.
"""

from __future__ import annotations

import importlib
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any, Protocol

from ingest.config import Settings
from ingest.errors import NotAvailable


class QueryNamespace:
    """The read-query modules of one backend by module name: `ns.overview.overview(cur, ...)`."""

    def __init__(self, package: str, backend: str, required: bool) -> None:
        self.package = package
        self.backend = backend
        self._required = required

    def __getattr__(self, name: str) -> ModuleType:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return importlib.import_module(f"{self.package}.{name}")
        except ModuleNotFoundError as exc:
            if self._required or exc.name not in (f"{self.package}.{name}", self.package):
                raise
            raise NotAvailable(
                f"{name} queries are not available on the {self.backend} store yet; use store=duckdb for them"
            ) from exc


DUCKDB_QUERIES = QueryNamespace("ingest.queries", "duckdb", required=True)
CLICKHOUSE_QUERIES = QueryNamespace("ingest.store.clickhouse.queries", "clickhouse", required=False)


class StoreBackend(Protocol):
    """The interface both stores implement (ingest/store/store.py SpanStore: DuckDB;
    ingest/store/clickhouse/store.py ClickHouseStore)."""

    name: str
    queries: QueryNamespace

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def ready(self) -> bool: ...

    def not_ready_reason(self) -> str | None: ...

    async def submit(self, project: str, request: Any, payload: bytes | None = None) -> None: ...

    def wait_loaded(self, timeout: float) -> bool: ...

    def sweep_retention(self, timeout: float = 60.0) -> int: ...

    def read(self) -> AbstractContextManager[Any]: ...


def queries_of(store: object) -> QueryNamespace:
    """The read-query namespace of `store` (DuckDB's for a store that does not say)."""
    return getattr(store, "queries", DUCKDB_QUERIES)


def open_store(settings: Settings, metrics: Any = None, **kwargs: Any) -> Any:
    """The store `settings.store` names, not started."""
    if settings.store == "clickhouse":
        from ingest.store.clickhouse.store import ClickHouseStore

        return ClickHouseStore(settings, metrics, **kwargs)
    from ingest.store.store import SpanStore

    return SpanStore(settings, metrics, **kwargs)
