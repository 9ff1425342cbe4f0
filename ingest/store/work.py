"""The write side of the seam for the services that keep their own tables (score configs, annotation
queues, online evaluators, datasets, approvals): which module holds a store's SQL for them.

Why a second namespace beside `queries_of`: these services read AND write their tables (create a
queue, take an item under a lease, record an evaluation), and how a write holds its guarantee
differs by store: DuckDB runs a read and its writes in one transaction on the single writer
thread; ClickHouse has no transactions, so its modules insert new row versions and tombstones
into ReplacingMergeTree tables (read FINAL) from one writer thread of the one node that owns the
table (docs/design.md §3). Both stores' modules have the same functions and signatures and raise
the same exceptions; the services call `work_of(store).<name>.<function>` inside
`store.run_write(...)` (writes) or `store.read()` (reads) and never see SQL. DuckDB's modules stay
beside their services (ingest/queues/table.py, ...); ClickHouse's are under
ingest/store/clickhouse/work/. A module ClickHouse lacks answers NotAvailable (501).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ingest.store.backend import QueryNamespace

# module name in the namespace -> the DuckDB module that holds that SQL today
_DUCKDB_MODULES = {
    "score_configs": "ingest.scores.config_store",
    "queue_table": "ingest.queues.table",
    "queue_items": "ingest.queues.items",
    "queue_fill": "ingest.queues.fill",
    "queue_results": "ingest.queues.results",
    "evaluations": "ingest.evaluators.state",
    "datasets": "ingest.datasets.store",
    "approvals": "ingest.approvals",
    "export_tables": "ingest.export.tables",  # a read, but of whole tables: the store's own layout
}


class DuckDBWork:
    """DuckDB's write modules by namespace name (the modules beside their services)."""

    backend = "duckdb"

    def __getattr__(self, name: str) -> ModuleType:
        if name.startswith("_") or name not in _DUCKDB_MODULES:
            raise AttributeError(name)
        return importlib.import_module(_DUCKDB_MODULES[name])


DUCKDB_WORK = DuckDBWork()
CLICKHOUSE_WORK = QueryNamespace("ingest.store.clickhouse.work", "clickhouse", required=False)


def work_of(store: object) -> DuckDBWork | QueryNamespace:
    """The write-module namespace of `store` (DuckDB's for a store that does not say)."""
    return CLICKHOUSE_WORK if getattr(store, "name", "duckdb") == "clickhouse" else DUCKDB_WORK
