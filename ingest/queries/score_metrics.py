"""Read-side SQL of score metrics in regressions and drift: one value per scored run.

Why one value per run: the statistics compare runs (independent units), and a run can carry several
scores of one name (two reviewers, a judge re-run, a score on one of its spans). A numeric score's
run value is the mean of them; a boolean's or a label's is the most recent one (by `created_at`,
then id), which is also what a person changing their label means. Scores join their run by
(project, trace_id), so the run's agent, version, mode and time decide which side a score is on,
and the project filter of the caller applies to the run and the score alike.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from ingest.queries.filters import CommonFilters, Where, runs_common_where
from ingest.queries.regressions import MAX_SAMPLE_RUNS

# (trace_id, name, data_type, run value as a number or NULL, run value as a label or NULL)
SCORE_VALUE_COLUMNS = ("trace_id", "name", "data_type", "value_numeric", "value_label")

_RUN_VALUE = """
    CASE WHEN s.data_type = 'numeric' THEN avg(s.value_numeric)
         ELSE arg_max(s.value_numeric, (s.created_at, s.score_id)) END AS value_numeric,
    arg_max(s.value_label, (s.created_at, s.score_id)) AS value_label
"""


def _names_clause(where: Where, names: list[str] | None) -> None:
    if names is not None:
        where.add(f"s.name IN ({', '.join('?' for _ in names)})" if names else "FALSE", *names)


def score_values(
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters, versions: list[str] | None = None,
    names: list[str] | None = None, limit: int = MAX_SAMPLE_RUNS,
) -> list[tuple[object, ...]]:
    """The run value of every score of the runs `sample_runs` picks with the same arguments (the
    same most recent `limit` runs), one row per (run, score name, data type); `names` None: all."""
    runs = runs_common_where(filters)
    if versions is not None:
        if not versions:
            return []
        runs.add(f"version IN ({', '.join('?' for _ in versions)})", *versions)
    scores = Where()
    scores.add("s.trace_id IS NOT NULL")
    _names_clause(scores, names)
    cur.execute(
        f"WITH r AS (SELECT project, trace_id FROM runs WHERE {runs.sql()} "
        "ORDER BY start_time DESC NULLS LAST, trace_id LIMIT ?) "
        f"SELECT s.trace_id, s.name, s.data_type, {_RUN_VALUE} "
        f"FROM scores s JOIN r ON s.project = r.project AND s.trace_id = r.trace_id WHERE {scores.sql()} "
        "GROUP BY s.project, s.trace_id, s.name, s.data_type ORDER BY s.name, s.trace_id",
        [*runs.params, limit, *scores.params],
    )
    return cur.fetchall()


def score_buckets(
    cur: duckdb.DuckDBPyConnection, filters: CommonFilters, name: str, data_type: str, label: str | None,
    origin: datetime, bucket_us: int,
) -> list[tuple[str | None, int, int, float, float]]:
    """(agent, bucket index from `origin`, scored runs, sum, sum of squares) of the run values of
    score `name` of `data_type` per bucket of run start time; with `label`, the value is 1 when the
    run's label is `label`, else 0 (its share)."""
    runs = runs_common_where(filters)
    runs.add("start_time IS NOT NULL")
    value = "(value_label = ?)::DOUBLE" if label is not None else "value_numeric"
    cur.execute(
        f"WITH r AS (SELECT project, trace_id, agent, start_time FROM runs WHERE {runs.sql()}), "
        f"v AS (SELECT r.agent, r.start_time, {_RUN_VALUE} FROM scores s "
        "JOIN r ON s.project = r.project AND s.trace_id = r.trace_id WHERE s.name = ? AND s.data_type = ? "
        "GROUP BY s.project, s.trace_id, r.agent, r.start_time, s.data_type), "
        f"x AS (SELECT agent, start_time, {value} AS value FROM v) "
        "SELECT agent, (epoch_us(start_time) - epoch_us(?::TIMESTAMP)) // ? AS bucket, count(*), sum(value), "
        "sum(value * value) FROM x WHERE value IS NOT NULL "
        "GROUP BY agent, bucket ORDER BY agent NULLS FIRST, bucket",
        [*runs.params, name, data_type, *([label] if label is not None else []), origin, bucket_us],
    )
    return [(r[0], int(r[1]), int(r[2]), float(r[3]), float(r[4])) for r in cur.fetchall()]


def score_types(cur: duckdb.DuckDBPyConnection, filters: CommonFilters, names: list[str] | None) -> dict[str, str]:
    """The data type of each score name among the runs in `filters` (the type most runs have)."""
    runs = runs_common_where(filters)
    scores = Where()
    scores.add("s.trace_id IS NOT NULL")
    _names_clause(scores, names)
    cur.execute(
        f"WITH r AS (SELECT project, trace_id FROM runs WHERE {runs.sql()}) "
        "SELECT s.name, s.data_type, count(DISTINCT s.trace_id) AS n FROM scores s "
        f"JOIN r ON s.project = r.project AND s.trace_id = r.trace_id WHERE {scores.sql()} "
        "GROUP BY s.name, s.data_type ORDER BY s.name, n DESC, s.data_type",
        [*runs.params, *scores.params],
    )
    out: dict[str, str] = {}
    for name, data_type, _ in cur.fetchall():
        out.setdefault(name, data_type)
    return out
