"""Sessions: runs grouped by their conversation id, listed by last activity, and one session's turns.

A session is every run of a project that carries the same conversation id, whatever convention
named it (`gen_ai.conversation.id`, `session.id`, `langfuse.session.id`, Traceloop's association
`session_id`: ingest/normalize/span.py promotes them all into `runs.conversation_id`). Why no table
of its own: a session is a GROUP BY over the runs rows, which the writer already keeps up to date
as late spans arrive, so its totals can never disagree with the runs they sum.

Paging is keyset on (last run start, session id, project) like /api/runs, so a session that gets a
new turn while someone pages moves to the front instead of shifting later pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from ingest.filters.compile import Sql
from ingest.queries.filters import CommonFilters, Where, runs_common_where
from ingest.queries.traces import WINDOW_SLACK
from tracer import conventions as c
from tracer.conventions import OperationClass as Op

# The per-session aggregate of the runs rows in scope (`r`); shared by the list and the detail.
_SESSION_AGGREGATES = """
    count(*) AS runs,
    min(start_time) AS start_time,
    max(start_time) AS last_start,
    max(coalesce(end_time, start_time)) AS end_time,
    epoch_ms(max(coalesce(end_time, start_time))) - epoch_ms(min(start_time)) AS duration_ms,
    coalesce(sum(input_tokens), 0) AS input_tokens,
    coalesce(sum(output_tokens), 0) AS output_tokens,
    sum(cost_usd) AS cost_usd,
    coalesce(sum(steps), 0) AS steps,
    coalesce(sum(llm_calls), 0) AS llm_calls,
    coalesce(sum(tool_calls), 0) AS tool_calls,
    coalesce(sum(tool_errors), 0) AS tool_errors,
    count(*) FILTER (WHERE ok = false) AS failures,
    coalesce(list_sort(list(DISTINCT user_id) FILTER (WHERE user_id IS NOT NULL)), []::VARCHAR[]) AS users,
    coalesce(list_sort(list(DISTINCT agent) FILTER (WHERE agent IS NOT NULL)), []::VARCHAR[]) AS agents
"""

TURN_COLUMNS = (
    "trace_id", "project", "agent", "version", "mode", "user_id", "start_time", "end_time", "duration_ms",
    "ok", "stop_reason", "steps", "llm_calls", "tool_calls", "tool_errors", "input_tokens", "output_tokens",
    "cost_usd", "root_span_id", "span_start", "span_end",
)  # fmt: skip


@dataclass(frozen=True)
class SessionFilters(CommonFilters):
    """The common run filters plus the session's user (any of its runs by this user)."""

    user: str | None = None


@dataclass(frozen=True)
class SessionKey:
    """Where a page of sessions ended: the last session's (last run start, id, project)."""

    last_start: datetime
    session_id: str
    project: str


def _where(f: SessionFilters) -> Where:
    where = runs_common_where(f)
    where.add("conversation_id IS NOT NULL")
    where.add("start_time IS NOT NULL")  # a turn is placed in its conversation by its start
    return where


def _rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def list_sessions(
    cur: duckdb.DuckDBPyConnection, filters: SessionFilters, limit: int, after: SessionKey | None,
    extra: Sql | None = None,
) -> tuple[list[dict[str, Any]], SessionKey | None]:
    """One page of sessions, most recently active first; the key of the next page when there is one.

    Totals are over the session's runs within the filters (a time range that cuts a session counts
    the turns inside it); `extra`, a compiled filter expression over `runs`, picks the sessions with
    at least one matching run within the filters (their totals still count every turn in range)."""
    where = _where(filters)
    if extra is not None:
        matching = _where(filters)
        matching.add(extra.sql, *extra.params)
        where.add(
            f"project || chr(0) || conversation_id IN (SELECT project || chr(0) || conversation_id FROM runs "
            f"WHERE {matching.sql()})",
            *matching.params,
        )
    having = Where()
    if filters.user is not None:
        having.add("list_contains(list(user_id), ?)", filters.user)
    if after is not None:
        having.add(
            "max(start_time) < ? OR (max(start_time) = ? AND (conversation_id < ? OR "
            "(conversation_id = ? AND project < ?)))",
            after.last_start, after.last_start, after.session_id, after.session_id, after.project,
        )  # fmt: skip
    sql = (
        f"SELECT project, conversation_id AS session_id, {_SESSION_AGGREGATES} FROM runs WHERE {where.sql()} "
        f"GROUP BY project, conversation_id HAVING {having.sql()} "
        "ORDER BY last_start DESC, session_id DESC, project DESC LIMIT ?"
    )
    cur.execute(sql, [*where.params, *having.params, limit + 1])
    rows = _rows(cur)
    nxt = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        nxt = SessionKey(last["last_start"], last["session_id"], last["project"])
    return rows, nxt


def session_turns(
    cur: duckdb.DuckDBPyConnection, session_id: str, filters: CommonFilters, limit: int
) -> tuple[str | None, list[dict[str, Any]], int]:
    """(project, the session's runs oldest first up to `limit`, how many runs it has in all).

    The project is the first readable one holding the id (a key reads one project; without keys a
    `project` parameter picks among several)."""
    where = runs_common_where(filters)
    where.add("conversation_id = ?", session_id)
    found = cur.execute(f"SELECT project, count(*) FROM runs WHERE {where.sql()} GROUP BY project ORDER BY project",
                        where.params).fetchall()  # fmt: skip
    if not found:
        return None, [], 0
    project, total = found[0]
    where.add("project = ?", project)
    cur.execute(
        f"SELECT {', '.join(TURN_COLUMNS)} FROM runs WHERE {where.sql()} "
        "ORDER BY start_time ASC NULLS LAST, trace_id LIMIT ?",
        [*where.params, limit],
    )
    return project, _rows(cur), total


# What a turn's transcript is read from, per trace: its top span's attributes, the content of its
# first and last LLM calls, and the message events the client logged for the trace.
_CONTENT_KEYS = (
    c.RUN_TASK, c.RUN_ANSWER, c.OI_INPUT_VALUE, c.OI_OUTPUT_VALUE, c.TRACELOOP_ENTITY_INPUT,
    c.TRACELOOP_ENTITY_OUTPUT, c.GEN_AI_INPUT_MESSAGES, c.GEN_AI_OUTPUT_MESSAGES, c.LANGFUSE_OBSERVATION_INPUT,
    c.LANGFUSE_OBSERVATION_OUTPUT,
)  # fmt: skip


def _json_path(key: str) -> str:
    """A JSON path for an attribute key with dots in it (a conventions constant, never user input)."""
    return f'$."{key}"'


def turn_content(
    cur: duckdb.DuckDBPyConnection, project: str, turns: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Per trace id: `root` (content attributes of the top span), `first_llm` / `last_llm` (those of
    its first and last LLM span) and `logs` (its message events, oldest first)."""
    if not turns:
        return {}
    ids = [t["trace_id"] for t in turns]
    roots = [t["root_span_id"] for t in turns if t["root_span_id"]]
    starts = [t["span_start"] or t["start_time"] for t in turns if t["span_start"] or t["start_time"]]
    ends = [t["span_end"] or t["end_time"] or t["start_time"] for t in turns
            if t["span_end"] or t["end_time"] or t["start_time"]]  # fmt: skip
    out: dict[str, dict[str, Any]] = {t["trace_id"]: {"root": {}, "first_llm": {}, "last_llm": {}, "logs": []}
                                      for t in turns}  # fmt: skip
    if not starts or not ends:
        return out
    lo, hi = min(starts), max(ends)
    picked = ", ".join(f"json_extract_string(attributes, '{_json_path(k)}') AS \"{k}\"" for k in _CONTENT_KEYS)
    cur.execute(
        f"""
        WITH s AS (
            SELECT trace_id, span_id, operation, start_time, {picked},
                row_number() OVER (PARTITION BY trace_id, operation = ? ORDER BY start_time, span_id) AS first_rank,
                row_number() OVER (PARTITION BY trace_id, operation = ? ORDER BY start_time DESC, span_id DESC)
                    AS last_rank
            FROM spans
            WHERE project = ? AND start_time >= ? AND start_time <= ?
              AND trace_id IN (SELECT unnest(?::VARCHAR[]))
              AND (span_id IN (SELECT unnest(?::VARCHAR[])) OR operation = ?)
        )
        SELECT * FROM s WHERE span_id IN (SELECT unnest(?::VARCHAR[])) OR first_rank = 1 OR last_rank = 1
        """,
        [Op.LLM.value, Op.LLM.value, project, lo - WINDOW_SLACK, hi + WINDOW_SLACK, ids, roots, Op.LLM.value, roots],
    )
    root_set = set(roots)
    for row in _rows(cur):
        content = {k: row[k] for k in _CONTENT_KEYS if row[k] is not None}
        entry = out[row["trace_id"]]
        if row["span_id"] in root_set:
            entry["root"] = content
        if row["operation"] == Op.LLM.value:
            if row["first_rank"] == 1:
                entry["first_llm"] = content
            if row["last_rank"] == 1:
                entry["last_llm"] = content
    events = [*c.GEN_AI_INPUT_MESSAGE_EVENTS, c.GEN_AI_EVENT_CHOICE, c.GEN_AI_EVENT_INFERENCE_DETAILS]
    cur.execute(
        f"""
        SELECT trace_id, event_name, body, json_extract_string(attributes, '{_json_path(c.GEN_AI_INPUT_MESSAGES)}')
                AS input_messages,
            json_extract_string(attributes, '{_json_path(c.GEN_AI_OUTPUT_MESSAGES)}') AS output_messages
        FROM log_records
        WHERE project = ? AND trace_id IN (SELECT unnest(?::VARCHAR[])) AND event_name IN (SELECT unnest(?::VARCHAR[]))
        ORDER BY time, record_key
        """,
        [project, ids, events],
    )
    for row in _rows(cur):
        out[row["trace_id"]]["logs"].append(row)
    return out
