"""ClickHouse form of `ingest.queries.score_metrics`: one value per scored run, for regressions and
drift. Same rules as DuckDB's: a numeric score's run value is the mean of the run's scores of that
name, a boolean's or a label's the most recent one (by created_at, then id); scores join their run
by (project, trace_id). Scores and runs are read FINAL (a replaced score counts once, in its latest
version)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ingest.queries.filters import CommonFilters, Where
from ingest.queries.regressions import MAX_SAMPLE_RUNS
from ingest.queries.score_metrics import SCORE_VALUE_COLUMNS, _names_clause
from ingest.store.clickhouse.queries._common import RUNS, runs_common_where

__all__ = ["SCORE_VALUE_COLUMNS", "score_buckets", "score_types", "score_values"]

_RUN_VALUE = """
    CASE WHEN s.data_type = 'numeric' THEN avg(s.value_numeric)
         ELSE argMax(s.value_numeric, (s.created_at, s.score_id)) END AS value_numeric,
    argMax(s.value_label, (s.created_at, s.score_id)) AS value_label
"""
_SCORES = "scores AS s FINAL"


def score_values(
    cur: Any, filters: CommonFilters, versions: list[str] | None = None,
    names: list[str] | None = None, limit: int = MAX_SAMPLE_RUNS,
) -> list[tuple[object, ...]]:
    """The run value of every score of the most recent `limit` runs in scope, one row per (run,
    score name, data type); `names` None: all."""
    runs = runs_common_where(filters)
    if versions is not None:
        if not versions:
            return []
        runs.add(f"version IN ({', '.join('?' for _ in versions)})", *versions)
    scores = Where()
    scores.add("s.trace_id IS NOT NULL")
    _names_clause(scores, names)
    cur.execute(
        f"WITH r AS (SELECT project, trace_id FROM {RUNS} WHERE {runs.sql()} "
        "ORDER BY start_time DESC NULLS LAST, trace_id LIMIT ?) "
        f"SELECT s.trace_id AS trace_id, s.name AS name, s.data_type AS data_type, {_RUN_VALUE} "
        f"FROM {_SCORES} INNER JOIN r ON s.project = r.project AND s.trace_id = r.trace_id WHERE {scores.sql()} "
        "GROUP BY s.project, s.trace_id, s.name, s.data_type ORDER BY name, trace_id",
        [*runs.params, limit, *scores.params],
    )
    return cur.fetchall()


def score_buckets(
    cur: Any, filters: CommonFilters, name: str, data_type: str, label: str | None, origin: datetime, bucket_us: int,
) -> list[tuple[str | None, int, int, float, float]]:
    """(agent, bucket index from `origin`, scored runs, sum, sum of squares) of the run values of
    score `name` of `data_type` per bucket of run start time; with `label`, the value is 1 when the
    run's label is `label`, else 0 (its share)."""
    runs = runs_common_where(filters)
    runs.add("start_time IS NOT NULL")
    value = "toFloat64(value_label = ?)" if label is not None else "value_numeric"
    cur.execute(
        f"WITH r AS (SELECT project, trace_id, agent, start_time FROM {RUNS} WHERE {runs.sql()}), "
        f"v AS (SELECT r.agent AS agent, r.start_time AS start_time, {_RUN_VALUE} FROM {_SCORES} "
        "INNER JOIN r ON s.project = r.project AND s.trace_id = r.trace_id WHERE s.name = ? AND s.data_type = ? "
        "GROUP BY s.project, s.trace_id, r.agent, r.start_time, s.data_type), "
        f"x AS (SELECT agent, start_time, {value} AS value FROM v) "
        # intDiv truncates toward zero, as DuckDB's integer //
        "SELECT agent, intDiv(toUnixTimestamp64Micro(start_time) - toUnixTimestamp64Micro(?), ?) AS bucket, "
        "count(), sum(value), sum(value * value) FROM x WHERE value IS NOT NULL "
        "GROUP BY agent, bucket ORDER BY agent ASC NULLS FIRST, bucket",
        [*runs.params, name, data_type, *([label] if label is not None else []), origin, bucket_us],
    )
    return [(r[0], int(r[1]), int(r[2]), float(r[3]), float(r[4])) for r in cur.fetchall()]


def score_types(cur: Any, filters: CommonFilters, names: list[str] | None) -> dict[str, str]:
    """The data type of each score name among the runs in `filters` (the type most runs have)."""
    runs = runs_common_where(filters)
    scores = Where()
    scores.add("s.trace_id IS NOT NULL")
    _names_clause(scores, names)
    cur.execute(
        f"WITH r AS (SELECT project, trace_id FROM {RUNS} WHERE {runs.sql()}) "
        f"SELECT s.name AS name, s.data_type AS data_type, uniqExact(s.trace_id) AS n FROM {_SCORES} "
        f"INNER JOIN r ON s.project = r.project AND s.trace_id = r.trace_id WHERE {scores.sql()} "
        "GROUP BY s.name, s.data_type ORDER BY name, n DESC, data_type",
        [*runs.params, *scores.params],
    )
    out: dict[str, str] = {}
    for name, data_type, _ in cur.fetchall():
        out.setdefault(name, data_type)
    return out
