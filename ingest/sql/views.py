"""The documented views `POST /api/sql` offers, each bound to the caller's projects by the server.

Why CTEs written here and not database views: a DuckDB view cannot take the caller's projects as a
parameter, and the project scope must never depend on what the query says. The server puts one
`NOT MATERIALIZED` CTE per view the query uses in front of it (so DuckDB pushes the query's filters
into the table scan, as it would for a view), each selecting the documented columns of one table
with `WHERE project IN (?, ...)`; the query's own references to `runs`, `spans`, ... are rewritten
to those CTEs (ingest/sql/check.py). The columns listed here are the contract (design.md §4 "SQL"):
new columns may be added, none renamed.
"""

from __future__ import annotations

from dataclasses import dataclass

# Prefix of every name the server generates; the query may not use it (ingest/sql/check.py).
RESERVED_PREFIX = "__sl_"


@dataclass(frozen=True)
class View:
    """One view: its name in queries, the physical table it reads, its columns and row condition."""

    name: str
    table: str  # the physical table in schema `main` (a module constant, never user input)
    columns: tuple[str, ...]
    doc: str
    condition: str = "TRUE"  # rows of the table that are rows of the view (constant SQL)

    @property
    def cte_name(self) -> str:
        return f"{RESERVED_PREFIX}view_{self.name}"

    def cte(self, projects: frozenset[str] | None) -> tuple[str, list[object]]:
        """`<cte_name> AS NOT MATERIALIZED (SELECT ... WHERE <project scope>)` and its parameters.

        None: every project (no API keys configured, or an operator key); an empty set: no row.
        """
        where, params = [self.condition], []
        if projects is not None:
            ordered = sorted(projects)
            where.append(f"project IN ({', '.join('?' for _ in ordered)})" if ordered else "FALSE")
            params.extend(ordered)
        cols = ", ".join(self.columns)
        sql = f"{self.cte_name} AS NOT MATERIALIZED (SELECT {cols} FROM main.{self.table} WHERE {' AND '.join(where)})"
        return sql, params


RUNS = View(
    "runs",
    "runs",
    (
        "project", "trace_id", "name", "agent", "version", "service", "environment", "user_id", "conversation_id",
        "mode", "start_time", "end_time", "duration_ms", "ok", "stop_reason", "stop_reason_source", "steps",
        "llm_calls", "tool_calls", "tool_errors", "error_spans", "input_tokens", "output_tokens", "cost_usd", "models",
        "failure_signature", "failure_evidence", "eval_run_id", "eval_case_id", "span_count", "agents",
        "handoff_reason", "handoff_target", "task_id",
        "handoff_reason", "handoff_target", "release_name", "release_cohort", "release_primary_trace_id",
    ),
    "One row per agent run (the RUN of GET /api/runs; traces that only build an agent are not runs).",
    condition="is_run IS NOT FALSE",
)

SPANS = View(
    "spans",
    "spans",
    (
        "project", "trace_id", "span_id", "parent_span_id", "service", "scope", "name", "kind", "start_time",
        "end_time", "duration_ms", "status", "status_message", "operation", "agent_name", "agent_version", "agent_id",
        "model", "response_model", "provider", "input_tokens", "output_tokens", "cache_read_tokens",
        "cache_creation_tokens", "reasoning_tokens", "cost_usd", "cost_source", "tool_name", "error_type",
        "step_index", "stop_reason", "conversation_id", "user_id", "environment", "run_mode",
        "time_to_first_chunk_ms", "stream", "attributes", "events", "resource",
    ),
    "Every stored span with its promoted columns; every attribute in `attributes` (JSON).",
)

TOOL_CALLS = View(
    "tool_calls",
    "tool_calls",
    (
        "project", "trace_id", "span_id", "tool_name", "start_time", "end_time", "duration_ms", "is_error",
        "error_type", "decision", "direct_cost_usd", "decision_cost_usd", "observation_tokens", "observation_source",
        "truncated", "dropped_tokens", "run_start", "agent", "version", "environment", "mode",
    ),
    "One row per tool call with its cost parts (direct, decision) and its run's facts; filled by the "
    "writer's analytics upkeep, about a second after the spans.",
)

SCORES = View(
    "scores",
    "scores",
    (
        "project", "score_id", "name", "data_type", "value_numeric", "value_label", "comment", "source", "author",
        "created_at", "trace_id", "span_id", "session_id", "metadata",
    ),
    "One row per score (of a run: trace_id; of a span: trace_id + span_id; of a session: session_id): numeric "
    "and boolean values in value_numeric (boolean as 1/0), labels in value_label.",
)

VIEWS: tuple[View, ...] = (RUNS, SPANS, TOOL_CALLS, SCORES)
VIEWS_BY_NAME: dict[str, View] = {v.name: v for v in VIEWS}
