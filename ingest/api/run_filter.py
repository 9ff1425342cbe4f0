"""A filter expression (`filter=`) compiled over the `runs` table for any endpoint that reads runs.

/api/runs, /api/sessions and /api/graph accept the same expression with the same meaning
(design.md §4 Filter expressions); this is the one place that turns it into SQL for a read, with the
full-text hits a `search()` term needs registered on the read's cursor for as long as the read runs.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from ingest.filters.compile import Sql, run_predicate
from ingest.filters.dialect import DialectName
from ingest.queries.run_scope import CHILD_SLACK
from ingest.search.hits import HitTables


@contextmanager
def run_filter_sql(
    cur: Any, index: Any, node: Any, text: str | None, projects: frozenset[str] | None, since: datetime | None,
    dialect: DialectName | None = None,
) -> Iterator[Sql | None]:
    """The compiled predicate (None without a filter) while the read that uses it runs on `cur`.

    A run's spans start after it does, so the spans a span-level term reads are bounded by the run
    range's start (with the clock-skew slack), letting zone maps skip older row groups. `dialect`:
    the store the read runs on (`queries_of(store).backend`); None: told by the cursor (DuckDB's
    registers Arrow tables, ClickHouse's has no such call)."""
    if dialect is None:
        dialect = "duckdb" if hasattr(cur, "register") else "clickhouse"
    if node is None:
        yield None
        return
    span_since = None if since is None else since - CHILD_SLACK
    hits = HitTables(cur, index, projects, span_since, None)
    try:
        yield run_predicate(node, text or "", hits, span_since, dialect=dialect)
    finally:
        hits.close()
