"""ClickHouse form of `ingest.queries.budget_advice`: per agent, P95 of each budgeted quantity over its
runs, the limits its latest run span recorded, and how many runs a limit would have cut.

P95 is `quantileExactInclusive`, the interpolation of DuckDB's `quantile_cont`, so the advice (P95
x 1.5) is the same figure on both stores; an agent without values gets NULL as in DuckDB.
"""

from __future__ import annotations

from typing import Any

from ingest.filters.dialect import DIALECTS
from ingest.queries.budget_advice import MAX_AGENTS, QUANTITIES, AgentHistory, Quantity
from ingest.queries.filters import CommonFilters
from ingest.store.clickhouse.queries._common import RUNS, null_if_empty, runs_common_where

__all__ = ["MAX_AGENTS", "QUANTITIES", "AgentHistory", "Quantity", "cuts", "histories", "recorded_limits"]

_CH = DIALECTS["clickhouse"]


def histories(cur: Any, filters: CommonFilters) -> list[AgentHistory]:
    """P95 and counts per agent, and each agent's latest run (whose span says its current limits)."""
    where = runs_common_where(filters)
    parts = ", ".join(
        f"{null_if_empty(f'quantileExactInclusive(0.95)({q.column})', q.column)} * {q.scale!r}, count({q.column})"
        for q in QUANTITIES
    )
    cur.execute(
        f"SELECT agent, count() AS n, {parts}, "
        "argMax(project, start_time), argMax(trace_id, start_time), argMax(root_span_id, start_time), "
        "max(start_time) "
        f"FROM {RUNS} WHERE {where.sql()} GROUP BY agent ORDER BY n DESC, agent ASC NULLS LAST LIMIT ?",
        [*where.params, MAX_AGENTS],
    )
    out = []
    for row in cur.fetchall():
        values = row[2:2 + 2 * len(QUANTITIES)]
        project, trace_id, span_id, start = row[2 + 2 * len(QUANTITIES):]
        out.append(AgentHistory(
            agent=row[0], runs=int(row[1]),
            p95={q.limit: (None if values[2 * i] is None else float(values[2 * i])) for i, q in enumerate(QUANTITIES)},
            measured={q.limit: int(values[2 * i + 1]) for i, q in enumerate(QUANTITIES)},
            latest=None if not trace_id else (project, trace_id, span_id, start),
        ))  # fmt: skip
    return out


def recorded_limits(cur: Any, latest: tuple[str, str, str | None, object] | None) -> dict[str, float]:
    """The limits the run span of `latest` recorded (steplens.budget.*); {} when it recorded none."""
    if latest is None or latest[2] is None:
        return {}
    project, trace_id, span_id, start = latest
    exprs, params = [], []
    for q in QUANTITIES:
        text, key_params = _CH.attribute_text("attributes", q.attribute)
        exprs.append(_CH.to_number(text))
        params += key_params
    time_clause = " AND start_time = ?" if start is not None else ""
    cur.execute(
        f"SELECT {', '.join(exprs)} FROM spans FINAL WHERE project = ? AND trace_id = ? AND span_id = ?{time_clause} "
        "LIMIT 1",
        [*params, project, trace_id, span_id, *([start] if start is not None else [])],
    )
    row = cur.fetchone()
    if row is None:
        return {}
    return {q.limit: float(v) for q, v in zip(QUANTITIES, row, strict=True) if v is not None}


def cuts(cur: Any, filters: CommonFilters, agent: str | None, limits: dict[str, float]) -> dict[str, tuple[int, int]]:
    """For each limit: (runs whose quantity is over it, runs its stop reason ended) of `agent`."""
    if not limits:
        return {}
    where = runs_common_where(filters)
    if agent is None:
        where.add("agent IS NULL")
    else:
        where.add("agent = ?", agent)
    chosen = [q for q in QUANTITIES if q.limit in limits]
    parts = ", ".join(
        f"countIf(ifNull({q.column} * {q.scale!r} > ?, false)), countIf(ifNull(stop_reason = ?, false))" for q in chosen
    )
    params: list[object] = []
    for q in chosen:
        params += [float(limits[q.limit]), q.stop_reason.value]
    cur.execute(f"SELECT {parts} FROM {RUNS} WHERE {where.sql()}", [*params, *where.params])
    row = cur.fetchone() or ()
    return {q.limit: (int(row[2 * i]), int(row[2 * i + 1])) for i, q in enumerate(chosen)}
