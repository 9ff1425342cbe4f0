"""The numbers budget advice is made of: per agent, P95 of each budgeted quantity over its runs, the
limits its latest run span recorded, and how many runs a limit would have cut.

Why three small queries instead of one: the limit a cut is counted against is only known after the
recorded limits are read (or taken from the request), and reading the latest run span of each agent
is a keyed lookup (project, trace, span, start time) rather than a join over every span.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from ingest.queries.filters import CommonFilters, runs_common_where
from tracer import conventions as c
from tracer.conventions import StopReason

MAX_AGENTS = 200  # agents advised per request, most runs first


@dataclass(frozen=True)
class Quantity:
    """One budgeted quantity: the runs column it is measured by, the kernel Budget field that limits
    it (and its run span attribute), and the stop reason of a run that limit ended."""

    limit: str  # kernel Budget field, e.g. max_steps
    column: str  # runs column
    attribute: str  # steplens.budget.* on the run span
    stop_reason: StopReason
    scale: float = 1.0  # runs column unit -> limit unit (duration_ms -> seconds)
    integer: bool = True  # the limit is a whole number (steps, tokens)


QUANTITIES: tuple[Quantity, ...] = (
    Quantity("max_steps", "steps", c.BUDGET_MAX_STEPS, StopReason.MAX_STEPS),
    Quantity("max_input_tokens", "input_tokens", c.BUDGET_MAX_INPUT_TOKENS, StopReason.TOKEN_BUDGET),
    Quantity("max_output_tokens", "output_tokens", c.BUDGET_MAX_OUTPUT_TOKENS, StopReason.TOKEN_BUDGET),
    Quantity("max_cost_usd", "cost_usd", c.BUDGET_MAX_COST_USD, StopReason.COST_BUDGET, integer=False),
    Quantity("max_seconds", "duration_ms", c.BUDGET_MAX_SECONDS, StopReason.TIMEOUT, scale=1e-3, integer=False),
)


@dataclass(frozen=True)
class AgentHistory:
    agent: str | None
    runs: int
    p95: dict[str, float | None]  # limit name -> P95 of its quantity (limit units); None: no values
    measured: dict[str, int]  # limit name -> runs with a value
    latest: tuple[str, str, str | None, object] | None  # (project, trace_id, root_span_id, start_time)


def histories(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> list[AgentHistory]:
    """P95 and counts per agent, and each agent's latest run (whose span says its current limits)."""
    where = runs_common_where(filters)
    parts = ", ".join(
        f"quantile_cont({q.column}, 0.95) * {q.scale!r}, count({q.column})" for q in QUANTITIES
    )
    cur.execute(
        f"SELECT agent, count(*) AS n, {parts}, "
        "arg_max(project, start_time), arg_max(trace_id, start_time), arg_max(root_span_id, start_time), "
        "max(start_time) "
        f"FROM runs WHERE {where.sql()} GROUP BY agent ORDER BY n DESC, agent NULLS LAST LIMIT ?",
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
            latest=None if trace_id is None else (project, trace_id, span_id, start),
        ))  # fmt: skip
    return out


def recorded_limits(
    cur: duckdb.DuckDBPyConnection, latest: tuple[str, str, str | None, object] | None
) -> dict[str, float]:
    """The limits the run span of `latest` recorded (steplens.budget.*); {} when it recorded none."""
    if latest is None or latest[2] is None:
        return {}
    project, trace_id, span_id, start = latest
    attrs = ", ".join("TRY_CAST(json_extract_string(attributes, ?) AS DOUBLE)" for _ in QUANTITIES)
    time_clause = " AND start_time = ?" if start is not None else ""
    cur.execute(
        f"SELECT {attrs} FROM spans WHERE project = ? AND trace_id = ? AND span_id = ?{time_clause} LIMIT 1",
        [*(f'$."{q.attribute}"' for q in QUANTITIES), project, trace_id, span_id,
         *([start] if start is not None else [])],
    )  # fmt: skip
    row = cur.fetchone()
    if row is None:
        return {}
    return {q.limit: float(v) for q, v in zip(QUANTITIES, row, strict=True) if v is not None}


def cuts(
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters, agent: str | None, limits: dict[str, float]
) -> dict[str, tuple[int, int]]:
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
        f"count(*) FILTER (WHERE {q.column} * {q.scale!r} > ?), count(*) FILTER (WHERE stop_reason = ?)"
        for q in chosen
    )
    params: list[object] = []
    for q in chosen:
        params += [limits[q.limit], q.stop_reason.value]
    cur.execute(f"SELECT {parts} FROM runs WHERE {where.sql()}", [*params, *where.params])
    row = cur.fetchone() or ()
    return {q.limit: (int(row[2 * i]), int(row[2 * i + 1])) for i, q in enumerate(chosen)}
