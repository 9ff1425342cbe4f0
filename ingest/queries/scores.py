"""Reading scores (`GET /api/scores`, the CLI, queues and analytics) and the API's score configs.

The run's agent, version and mode are joined from `runs` here, at read time, not copied onto the
score: a score may be stored before any span of its run (end-user feedback races the exporter),
and a foreign client's run can change agent as late spans arrive. A session score, or one whose
run has not arrived, has NULL agent/version/mode.

Keyset paging on (created_at, project, score_id), newest first, like /api/runs: a score stored
while someone pages never shifts later pages. A replaced score moves to its new time.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from ingest.queries.filters import CommonFilters, Where, mode_clause, project_clause, runs_common_where
from ingest.queries.runs import find_runs_by_trace
from ingest.schema import trace_key_sql
from ingest.scores.configs import ScoreConfig
from ingest.scores.model import DataType, join_value

_HEX15 = re.compile(r"^[0-9a-f]{15}$")
SCORE_COLUMNS = (
    "project", "score_id", "name", "data_type", "value_numeric", "value_label", "comment", "source", "author",
    "created_at", "trace_id", "span_id", "session_id", "metadata",
)
_SCORE_SELECT = ", ".join(f"s.{c}" for c in SCORE_COLUMNS)
_PROJECT_AT = SCORE_COLUMNS.index("project")
_SELECT = _SCORE_SELECT + ", r.agent AS agent, r.version AS version, r.mode AS mode"
_FROM = "scores s LEFT JOIN runs r ON r.project = s.project AND r.trace_id = s.trace_id"


@dataclass(frozen=True)
class ScoreFilters:
    """Filters of a score listing; `projects` as in CommonFilters (None: all, empty: nothing).
    `since`/`until` bound `created_at`; `modes` None means every mode (and scores with no run)."""

    projects: frozenset[str] | None = None
    trace_id: str | None = None
    span_id: str | None = None
    session_id: str | None = None
    name: str | None = None
    source: str | None = None
    author: str | None = None
    agent: str | None = None
    version: str | None = None
    modes: frozenset[str] | None = None
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True)
class ScoreKey:
    """A page boundary: the last row's (created_at, project, score_id)."""

    created_at: datetime
    project: str
    score_id: str


@dataclass
class ScorePage:
    rows: list[dict[str, Any]]
    next_key: ScoreKey | None


def _where(f: ScoreFilters) -> Where:
    where = Where()
    project_clause(where, f.projects, "s.project")
    if f.trace_id is not None:
        where.add(f"s.trace_key = {trace_key_sql('?')} AND s.trace_id = ?", f.trace_id, f.trace_id)
    for column, value in (("span_id", f.span_id), ("session_id", f.session_id), ("name", f.name),
                          ("source", f.source), ("author", f.author)):
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


def row_dict(row: tuple[Any, ...], names: list[str]) -> dict[str, Any]:
    """A result row as the API's SCORE: the value joined back to its type, metadata parsed."""
    d = dict(zip(names, row, strict=True))
    d["value"] = join_value(d["data_type"], d["value_numeric"], d["value_label"])
    if d["data_type"] == DataType.NUMERIC and d["value_label"] is None:
        d.pop("value_label")
    else:
        d["label"] = d.pop("value_label")
    d.pop("value_numeric")
    if isinstance(d.get("metadata"), str):
        d["metadata"] = json.loads(d["metadata"])
    return d


def list_scores(
    cur: duckdb.DuckDBPyConnection, f: ScoreFilters, limit: int = 100, after: ScoreKey | None = None
) -> ScorePage:
    """Scores matching `f`, newest first, at most `limit`, after the boundary `after`."""
    where = _where(f)
    if after is not None:
        where.add("(s.created_at, s.project, s.score_id) < (?, ?, ?)", after.created_at, after.project, after.score_id)
    sql = (f"SELECT {_SELECT} FROM {_FROM} WHERE {where.sql()} "
           "ORDER BY s.created_at DESC, s.project DESC, s.score_id DESC LIMIT ?")
    result = cur.execute(sql, [*where.params, limit + 1])
    names = [d[0] for d in result.description]
    raw = result.fetchall()
    rows = [row_dict(r, names) for r in raw[:limit]]
    nxt = None
    if len(raw) > limit:
        last = rows[-1]
        nxt = ScoreKey(last["created_at"], last["project"], last["score_id"])
    return ScorePage(rows, nxt)


def scores_of_trace(cur: duckdb.DuckDBPyConnection, projects: frozenset[str] | None, trace_id: str) -> list[dict[str, Any]]:
    """Every score of one trace (its run and its spans), oldest first: the trace page's Scores panel.

    Why the run's agent/version/mode are looked up apart rather than joined (`_FROM`): all the scores
    are of one trace, so of its run in their project, and the join built a hash table of every run
    (the runs scan cost ~10 ms of a trace fetch at 287,000 runs, scores or not). The trace index finds
    the run in a segment or two, and only when the trace has scores at all."""
    where = _where(ScoreFilters(projects=projects, trace_id=trace_id))  # the scores' own columns only
    result = cur.execute(f"SELECT {_SCORE_SELECT} FROM scores s WHERE {where.sql()} ORDER BY s.created_at, s.score_id",
                         where.params)
    names = [d[0] for d in result.description] + ["agent", "version", "mode"]
    raw = result.fetchall()
    if not raw:
        return []
    runs = {r["project"]: r for r in find_runs_by_trace(cur, trace_id, projects)}
    rows = []
    for r in raw:
        run = runs.get(r[_PROJECT_AT])  # a score whose run is not stored has none, as the LEFT JOIN gave
        facts = (run["agent"], run["version"], run["mode"]) if run is not None else (None, None, None)
        rows.append(row_dict((*r, *facts), names))
    return rows


_CONFIG_COLUMNS = "name, data_type, min_value, max_value, categories, description"


def api_configs(cur: duckdb.DuckDBPyConnection, project: str) -> list[ScoreConfig]:
    """The score configs declared through the API for `project`."""
    rows = cur.execute(f"SELECT {_CONFIG_COLUMNS} FROM score_configs WHERE project = ? ORDER BY name",
                       [project]).fetchall()
    return [
        ScoreConfig(name=n, data_type=DataType(t), min=lo, max=hi, categories=list(c) if c is not None else None,
                    description=d)
        for n, t, lo, hi, c, d in rows
    ]


# The page's trace keys (BIGINT, ingest.schema.trace_key_sql) as a semi-join: one scan comparing
# integers; the ids, projects and "latest per name" are settled in Python over the few rows found
# (a window function here cost several times the scan).
_OF_TRACES = """
SELECT project, trace_id, name, data_type, value_numeric, value_label, created_at, score_id
FROM scores s SEMI JOIN (SELECT unnest(?::BIGINT[]) AS k) keys ON s.trace_key = keys.k
"""


def latest_values(cur: duckdb.DuckDBPyConnection, runs: list[dict[str, Any]]) -> None:
    """Set each run row's `scores`: name -> the latest value of that name on its trace (run or span
    scores alike), one query for the page."""
    for run in runs:
        run["scores"] = {}
    by_key = {(r["project"], r["trace_id"]): r for r in runs}
    keys = sorted({int(t[:15], 16) for _, t in by_key if _HEX15.match(t[:15])})
    if not keys:
        return
    latest: dict[tuple[str, str, str], tuple[Any, ...]] = {}
    for row in cur.execute(_OF_TRACES, [keys]).fetchall():
        project, trace_id, name, _, _, _, created_at, score_id = row
        if (project, trace_id) not in by_key:
            continue
        best = latest.get((project, trace_id, name))
        if best is None or (created_at, score_id) > (best[6], best[7]):
            latest[(project, trace_id, name)] = row
    for (project, trace_id, name), row in sorted(latest.items()):
        by_key[(project, trace_id)]["scores"][name] = join_value(row[3], row[4], row[5])


MAX_AGGREGATE_ROWS = 5000
_AGGREGATE = """
WITH r AS (SELECT project, trace_id, agent, version, start_time FROM runs WHERE {where})
SELECT s.name, s.data_type, r.agent, r.version, date_trunc('day', r.start_time) AS day, s.value_label AS label,
       count(*) AS n, avg(s.value_numeric) AS mean
FROM scores s JOIN r ON r.project = s.project AND r.trace_id = s.trace_id
WHERE r.start_time IS NOT NULL
GROUP BY ALL
ORDER BY day, s.name, r.agent NULLS FIRST, r.version NULLS FIRST, label NULLS FIRST
LIMIT ?
"""


def score_aggregates(cur: duckdb.DuckDBPyConnection, filters: CommonFilters) -> list[dict[str, Any]]:
    """Per (name, agent, version, run start day) aggregates of the scores of the runs in `filters`:
    mean (numeric), share of true (boolean), label counts (categorical). Session scores, and scores
    whose run is not stored, have no agent or day and are not in these."""
    where = runs_common_where(filters)
    rows = cur.execute(_AGGREGATE.format(where=where.sql()), [*where.params, MAX_AGGREGATE_ROWS * 20]).fetchall()
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for name, data_type, agent, version, day, label, n, mean in rows:
        key = (name, data_type, agent, version, day)
        agg = out.get(key)
        if agg is None:
            if len(out) >= MAX_AGGREGATE_ROWS:
                continue
            agg = out[key] = {"name": name, "data_type": data_type, "agent": agent, "version": version, "day": day,
                              "n": 0, "_sum": 0.0}
        agg["n"] += n
        if data_type == DataType.CATEGORICAL:
            agg.setdefault("labels", {})[label] = agg.get("labels", {}).get(label, 0) + n
        elif mean is not None:
            agg["_sum"] += mean * n
    for agg in out.values():
        total = agg.pop("_sum")
        if agg["data_type"] == DataType.NUMERIC:
            agg["mean"] = total / agg["n"] if agg["n"] else None
        elif agg["data_type"] == DataType.BOOLEAN:
            agg["share_true"] = total / agg["n"] if agg["n"] else None
    return list(out.values())
