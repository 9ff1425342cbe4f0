"""ClickHouse form of `ingest.queries.search`: joining full-text hits (the SQLite index of
ingest/search, shared by both stores) with the stored spans.

The spans table is the truth: a hit whose span retention deleted is dropped here, and a filter
narrows the hits with the meaning it has on /api/spans. The hits' keys travel as array parameters
(ClickHouse has no per-connection registered tables), never as SQL text.
"""

from __future__ import annotations

from typing import Any

from ingest.filters.compile import Sql
from ingest.search.index import Hit
from ingest.store.clickhouse.queries._common import dicts
from ingest.store.clickhouse.queries.spans import require_clickhouse

_FACTS = ", ".join(
    f"s.{c} AS {c}"
    for c in (
        "project", "trace_id", "span_id", "name", "operation", "agent_name", "tool_name", "model", "status",
        "error_type", "start_time", "duration_ms",
    )
)  # fmt: skip


def span_facts(cur: Any, hits: list[Hit], predicate: Sql | None) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(project, trace_id, span_id) -> the span's facts, for the hits whose span is stored and matches."""
    require_clickhouse(predicate)
    if not hits:
        return {}
    first = min(h.start_time for h in hits)
    last = max(h.start_time for h in hits)
    extra, params = ("", []) if predicate is None else (f" AND ({predicate.sql})", predicate.params)
    cur.execute(
        f"SELECT {_FACTS} FROM spans AS s FINAL WHERE s.start_time BETWEEN ? AND ? "
        "AND (s.project, s.trace_id, s.span_id) IN (SELECT arrayJoin(arrayZip(?, ?, ?)))" + extra,
        [first, last, [h.project for h in hits], [h.trace_id for h in hits], [h.span_id for h in hits], *params],
    )
    return {(r["project"], r["trace_id"], r["span_id"]): r for r in dicts(cur)}
