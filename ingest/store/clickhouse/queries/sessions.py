"""ClickHouse form of `ingest.queries.sessions`: runs grouped by conversation id, one session's turns
and the content its transcript is read from.

Same meaning, order and keyset as DuckDB's. Two spellings differ: the aggregates are named with
private aliases and renamed by an outer SELECT (a ClickHouse alias is visible in WHERE and inside
other aggregates, so `min(start_time) AS start_time` would capture the WHERE's `start_time`), and
attribute text is read with the filter compiler's ClickHouse JSON expression (a string unquoted,
anything else as its JSON, NULL when absent), DuckDB's `json_extract_string`.
"""

from __future__ import annotations

from typing import Any

from ingest.filters.compile import Sql
from ingest.filters.dialect import ClickHouseDialect
from ingest.queries.filters import CommonFilters, Where
from ingest.queries.sessions import _CONTENT_KEYS, TURN_COLUMNS, SessionFilters, SessionKey
from ingest.queries.traces import WINDOW_SLACK
from ingest.store.clickhouse.queries._common import LOG_RECORDS, RUNS, SPANS, dicts, runs_common_where
from tracer import conventions as c
from tracer.conventions import OperationClass as Op

__all__ = ["TURN_COLUMNS", "SessionFilters", "SessionKey", "list_sessions", "session_turns", "turn_content"]

# (private alias, aggregate, public name): the public names are the DuckDB module's columns
_AGGREGATES = (
    ("s_runs", "count()", "runs"),
    ("s_start", "min(start_time)", "start_time"),
    ("s_last", "max(start_time)", "last_start"),
    ("s_end", "max(coalesce(end_time, start_time))", "end_time"),
    ("s_duration", "toUnixTimestamp64Milli(max(coalesce(end_time, start_time))) - "
                   "toUnixTimestamp64Milli(min(start_time))", "duration_ms"),
    ("s_in", "toInt64(ifNull(sum(input_tokens), 0))", "input_tokens"),
    ("s_out", "toInt64(ifNull(sum(output_tokens), 0))", "output_tokens"),
    ("s_cost", "sum(cost_usd)", "cost_usd"),
    ("s_steps", "toInt64(ifNull(sum(steps), 0))", "steps"),
    ("s_llm", "toInt64(ifNull(sum(llm_calls), 0))", "llm_calls"),
    ("s_tools", "toInt64(ifNull(sum(tool_calls), 0))", "tool_calls"),
    ("s_tool_errors", "toInt64(ifNull(sum(tool_errors), 0))", "tool_errors"),
    ("s_failures", "countIf(ok = false)", "failures"),
    ("s_users", "arraySort(groupUniqArray(user_id))", "users"),
    ("s_agents", "arraySort(groupUniqArray(agent))", "agents"),
)  # fmt: skip
_INNER = ", ".join(f"{expr} AS {alias}" for alias, expr, _ in _AGGREGATES)
_OUTER = ", ".join(f"{alias} AS {name}" for alias, _, name in _AGGREGATES)


def _where(f: SessionFilters) -> Where:
    where = runs_common_where(f)
    where.add("conversation_id IS NOT NULL")
    where.add("start_time IS NOT NULL")  # a turn is placed in its conversation by its start
    return where


def list_sessions(
    cur: Any, filters: SessionFilters, limit: int, after: SessionKey | None, extra: Sql | None = None
) -> tuple[list[dict[str, Any]], SessionKey | None]:
    """One page of sessions, most recently active first; the key of the next page when there is one
    (DuckDB's `list_sessions`: totals over the turns in range, `extra` picks sessions by one run)."""
    where = _where(filters)
    if extra is not None:
        matching = _where(filters)
        matching.add(extra.sql, *extra.params)
        where.add(
            f"(project, conversation_id) IN (SELECT project, conversation_id FROM {RUNS} WHERE {matching.sql()})",
            *matching.params,
        )
    having = Where()
    if filters.user is not None:
        having.add("has(groupArray(user_id), ?)", filters.user)
    if after is not None:
        having.add(
            "max(start_time) < ? OR (max(start_time) = ? AND (conversation_id < ? OR "
            "(conversation_id = ? AND project < ?)))",
            after.last_start, after.last_start, after.session_id, after.session_id, after.project,
        )  # fmt: skip
    sql = (
        f"SELECT project, session_id, {_OUTER} FROM ("
        f"SELECT project, conversation_id AS session_id, {_INNER} FROM {RUNS} WHERE {where.sql()} "
        f"GROUP BY project, conversation_id HAVING {having.sql()}) "
        "ORDER BY last_start DESC, session_id DESC, project DESC LIMIT ?"
    )
    cur.execute(sql, [*where.params, *having.params, limit + 1])
    rows = dicts(cur)
    nxt = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        nxt = SessionKey(last["last_start"], last["session_id"], last["project"])
    return rows, nxt


def session_turns(
    cur: Any, session_id: str, filters: CommonFilters, limit: int
) -> tuple[str | None, list[dict[str, Any]], int]:
    """(project, the session's runs oldest first up to `limit`, how many runs it has in all)."""
    where = runs_common_where(filters)
    where.add("conversation_id = ?", session_id)
    cur.execute(f"SELECT project, count() FROM {RUNS} WHERE {where.sql()} GROUP BY project ORDER BY project",
                where.params)  # fmt: skip
    found = cur.fetchall()
    if not found:
        return None, [], 0
    project, total = found[0]
    where.add("project = ?", project)
    cur.execute(
        f"SELECT {', '.join(TURN_COLUMNS)} FROM {RUNS} WHERE {where.sql()} "
        "ORDER BY start_time ASC NULLS LAST, trace_id LIMIT ?",
        [*where.params, limit],
    )
    return project, dicts(cur), int(total)


def _text(key: str) -> tuple[str, list[object]]:
    return ClickHouseDialect().attribute_text("attributes", key)


def turn_content(cur: Any, project: str, turns: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per trace id: `root`, `first_llm` / `last_llm` content and `logs` (DuckDB's `turn_content`)."""
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
    picked: list[str] = []
    picked_params: list[object] = []
    for i, key in enumerate(_CONTENT_KEYS):
        sql, params = _text(key)
        picked.append(f"{sql} AS c{i}")
        picked_params += params
    llm = Op.LLM.value
    cur.execute(
        f"""
        SELECT * FROM (
            SELECT trace_id, span_id, operation, start_time, {', '.join(picked)},
                row_number() OVER (PARTITION BY trace_id, operation = ? ORDER BY start_time, span_id) AS first_rank,
                row_number() OVER (PARTITION BY trace_id, operation = ? ORDER BY start_time DESC, span_id DESC)
                    AS last_rank
            FROM {SPANS}
            WHERE project = ? AND trace_id IN (SELECT arrayJoin(?)) AND (span_id IN (SELECT arrayJoin(?)) OR operation = ?)
              AND start_time >= ? AND start_time <= ?
        ) WHERE span_id IN (SELECT arrayJoin(?)) OR first_rank = 1 OR last_rank = 1
        """,
        [*picked_params, llm, llm, project, ids, roots, llm, lo - WINDOW_SLACK, hi + WINDOW_SLACK, roots],
    )  # fmt: skip
    root_set = set(roots)
    for row in dicts(cur):
        content = {k: row[f"c{i}"] for i, k in enumerate(_CONTENT_KEYS) if row[f"c{i}"] is not None}
        entry = out[row["trace_id"]]
        if row["span_id"] in root_set:
            entry["root"] = content
        if row["operation"] == llm:
            if row["first_rank"] == 1:
                entry["first_llm"] = content
            if row["last_rank"] == 1:
                entry["last_llm"] = content
    events = [*c.GEN_AI_INPUT_MESSAGE_EVENTS, c.GEN_AI_EVENT_CHOICE, c.GEN_AI_EVENT_INFERENCE_DETAILS]
    inputs, input_params = _text(c.GEN_AI_INPUT_MESSAGES)
    outputs, output_params = _text(c.GEN_AI_OUTPUT_MESSAGES)
    cur.execute(
        f"""
        SELECT trace_id, event_name, body, {inputs} AS input_messages, {outputs} AS output_messages
        FROM {LOG_RECORDS}
        WHERE project = ? AND trace_id IN (SELECT arrayJoin(?)) AND event_name IN (SELECT arrayJoin(?))
        ORDER BY time, record_key
        """,
        [*input_params, *output_params, project, ids, events],
    )
    for row in dicts(cur):
        out[row["trace_id"]]["logs"].append(row)
    return out
