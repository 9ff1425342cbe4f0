"""ClickHouse form of `ingest.queries.scores`: score listings, a trace's scores, the latest value
per name of a page of runs, per-day aggregates and the API's score configs.

As in DuckDB the run's agent/version/mode are joined from `runs` at read time (a score may arrive
before its run). Scores, runs and configs are read `FINAL`: a replaced score (same id) is its
latest version only. A LEFT JOIN miss leaves the run's Nullable columns NULL, as DuckDB does.
"""

from __future__ import annotations

from typing import Any

from ingest.queries.filters import CommonFilters, Where, mode_clause, project_clause
from ingest.queries.scores import (
    MAX_AGGREGATE_ROWS,
    SCORE_COLUMNS,
    ScoreFilters,
    ScoreKey,
    ScorePage,
    row_dict,
)
from ingest.scores.configs import ScoreConfig
from ingest.scores.model import DataType, join_value
from ingest.store.clickhouse.queries._common import RUNS, SCORES, null_if_empty, runs_common_where

__all__ = ["ScoreFilters", "ScoreKey", "ScorePage", "api_configs", "latest_values", "list_scores",
           "score_aggregates", "scores_of_trace"]

_SELECT = ", ".join(f"s.{c} AS {c}" for c in SCORE_COLUMNS) + ", r.agent AS agent, r.version AS version, r.mode AS mode"
_FROM = (f"(SELECT * FROM {SCORES}) AS s LEFT JOIN (SELECT project, trace_id, agent, version, mode FROM {RUNS}) AS r "
         "ON r.project = s.project AND r.trace_id = s.trace_id")


def _where(f: ScoreFilters) -> Where:
    where = Where()
    project_clause(where, f.projects, "s.project")
    for column, value in (("trace_id", f.trace_id), ("span_id", f.span_id), ("session_id", f.session_id),
                          ("name", f.name), ("source", f.source), ("author", f.author)):
        if value is not None:
            where.add(f"s.{column} = ?", value)
    if f.agent is not None:
        where.add("r.agent = ?", f.agent)
    if f.version is not None:
        where.add("r.version = ?", f.version)
    if f.modes is not None:
        mode_clause(where, f.modes, "r.mode")
    if f.since is not None:
        where.add("s.created_at >= ?", f.since)
    if f.until is not None:
        where.add("s.created_at < ?", f.until)
    return where


def _rows(cur: Any) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [row_dict(r, names) for r in cur.fetchall()]


def list_scores(cur: Any, f: ScoreFilters, limit: int = 100, after: ScoreKey | None = None) -> ScorePage:
    """Scores matching `f`, newest first, at most `limit`, after the boundary `after`."""
    where = _where(f)
    if after is not None:
        where.add("(s.created_at, s.project, s.score_id) < (?, ?, ?)", after.created_at, after.project, after.score_id)
    cur.execute(
        f"SELECT {_SELECT} FROM {_FROM} WHERE {where.sql()} "
        "ORDER BY s.created_at DESC, s.project DESC, s.score_id DESC LIMIT ?",
        [*where.params, limit + 1],
    )
    raw = _rows(cur)
    rows = raw[:limit]
    nxt = None
    if len(raw) > limit:
        last = rows[-1]
        nxt = ScoreKey(last["created_at"], last["project"], last["score_id"])
    return ScorePage(rows, nxt)


def scores_of_trace(cur: Any, projects: frozenset[str] | None, trace_id: str) -> list[dict[str, Any]]:
    """Every score of one trace (its run and its spans), oldest first."""
    where = _where(ScoreFilters(projects=projects, trace_id=trace_id))
    cur.execute(f"SELECT {_SELECT} FROM {_FROM} WHERE {where.sql()} ORDER BY s.created_at, s.score_id", where.params)
    return _rows(cur)


def api_configs(cur: Any, project: str) -> list[ScoreConfig]:
    """The score configs declared through the API for `project` (an empty Array is DuckDB's NULL)."""
    cur.execute(
        "SELECT name, data_type, min_value, max_value, categories, description FROM score_configs FINAL "
        "WHERE project = ? ORDER BY name",
        [project],
    )
    return [
        ScoreConfig(name=n, data_type=DataType(t), min=lo, max=hi, categories=list(c) if c else None, description=d)
        for n, t, lo, hi, c, d in cur.fetchall()
    ]


def latest_values(cur: Any, runs: list[dict[str, Any]]) -> None:
    """Set each run row's `scores`: name -> the latest value of that name on its trace."""
    for run in runs:
        run["scores"] = {}
    by_key = {(r["project"], r["trace_id"]): r for r in runs}
    if not by_key:
        return
    trace_ids = sorted({t for _, t in by_key})
    cur.execute(
        "SELECT project, trace_id, name, data_type, value_numeric, value_label, created_at, score_id "
        f"FROM {SCORES} WHERE has(?, trace_id)",
        [trace_ids],
    )
    latest: dict[tuple[str, str, str], tuple[Any, ...]] = {}
    for row in cur.fetchall():
        project, trace_id, name, _, _, _, created_at, score_id = row
        if (project, trace_id) not in by_key:
            continue
        best = latest.get((project, trace_id, name))
        if best is None or (created_at, score_id) > (best[6], best[7]):
            latest[(project, trace_id, name)] = row
    for (project, trace_id, name), row in sorted(latest.items()):
        by_key[(project, trace_id)]["scores"][name] = join_value(row[3], row[4], row[5])


_AGGREGATE = f"""
SELECT s.name, s.data_type, r.agent, r.version, toDateTime64(toStartOfDay(r.start_time), 6, 'UTC') AS day,
       s.value_label AS label, count() AS n, {null_if_empty("avg(s.value_numeric)", "s.value_numeric")} AS mean
FROM (SELECT * FROM {SCORES}) AS s
INNER JOIN (SELECT project, trace_id, agent, version, start_time FROM {RUNS} WHERE {{where}}) AS r
    ON r.project = s.project AND r.trace_id = s.trace_id
WHERE r.start_time IS NOT NULL
GROUP BY s.name, s.data_type, r.agent, r.version, day, label
ORDER BY day, s.name, r.agent NULLS FIRST, r.version NULLS FIRST, label NULLS FIRST
LIMIT ?
"""


def score_aggregates(cur: Any, filters: CommonFilters) -> list[dict[str, Any]]:
    """Per (name, agent, version, run start day) aggregates of the scores of the runs in `filters`,
    folded in Python exactly as DuckDB's module folds them."""
    where = runs_common_where(filters)
    cur.execute(_AGGREGATE.format(where=where.sql()), [*where.params, MAX_AGGREGATE_ROWS * 20])
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for name, data_type, agent, version, day, label, n, mean in cur.fetchall():
        key = (name, data_type, agent, version, day)
        agg = out.get(key)
        if agg is None:
            if len(out) >= MAX_AGGREGATE_ROWS:
                continue
            agg = out[key] = {"name": name, "data_type": data_type, "agent": agent, "version": version, "day": day,
                              "n": 0, "_sum": 0.0}
        agg["n"] += int(n)
        if data_type == DataType.CATEGORICAL:
            agg.setdefault("labels", {})[label] = agg.get("labels", {}).get(label, 0) + int(n)
        elif mean is not None:
            agg["_sum"] += mean * n
    for agg in out.values():
        total = agg.pop("_sum")
        if agg["data_type"] == DataType.NUMERIC:
            agg["mean"] = total / agg["n"] if agg["n"] else None
        elif agg["data_type"] == DataType.BOOLEAN:
            agg["share_true"] = total / agg["n"] if agg["n"] else None
    return list(out.values())
