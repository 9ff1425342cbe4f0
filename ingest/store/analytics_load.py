"""Analytics upkeep: LLM usage per run and model, and per-tool-call costs, for the traces a pass touches.

Why precomputed: the per-tool cost split needs a tool span's siblings (the LLM calls that chose it,
its truncate span) and every later LLM call of its run. Doing that join at query time over 10M
spans costs seconds; doing it for the traces that got spans costs milliseconds and leaves the query
API small GROUP BYs over `tool_calls`, `tool_carry`, `tool_rollup` and `run_models`.

Why a whole trace is recomputed (not patched): spans of one trace arrive in any order and in any
number of batches (a chat span after its tool span, the truncate span in the next export). The
rows of a trace are a pure function of the trace's tool/llm/truncate/step spans and its run facts,
so each pass recomputes the touched traces' rows from the stored spans. The read is bounded by the
traces' extent (runs.span_start/span_end) so zone maps skip the rest of the table.

Why `tool_rollup` is patched by deltas instead: a cell (hour x run facts x tool) sums many traces,
so recomputing it means reading all of them. Each recomputed trace's old tool rows are subtracted
and its new rows added (ingest/schema.py tool_rollup_rows), in the same MERGE.

When: not in the load transaction but in the writer's upkeep pass (ingest/store/upkeep.py), which
collects the traces of many loads and recomputes each once. Each statement costs a fixed ~5-20 ms
whatever its size; paying them once per pass instead of once per load is what keeps the loader fast.
"""

from __future__ import annotations

import re
from typing import Any

import duckdb

from ingest.schema import TOOL_ROLLUP_KEYS, TOOL_ROLLUP_NUMBERS, tool_rollup_rows
from tracer.conventions import OperationClass as Op

_PARAM = re.compile(r"\$(\w+)")

PARAMS: dict[str, Any] = {
    "step": Op.STEP.value,
    "llm": Op.LLM.value,
    "tool": Op.TOOL.value,
    "truncate": Op.TRUNCATE.value,
    "plan": Op.PLAN.value,
    "replan": Op.REPLAN.value,
}


def execute(conn: duckdb.DuckDBPyConnection, sql: str, extra: dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
    """Run `sql` with exactly the named parameters it references (DuckDB rejects unused ones)."""
    values = {**PARAMS, **(extra or {})}
    return conn.execute(sql, {name: values[name] for name in set(_PARAM.findall(sql))})


# The columns of a span that any analytics row depends on (spans row `s`). Plan and replan spans keep
# their attributes (plan_load parses them); the rest need only promoted columns.
TRACE_SPAN_COLUMNS = """
    s.project, s.trace_id, s.span_id, s.parent_span_id, s.operation, s.start_time, s.end_time,
    s.duration_ms, s.status, s.error_type, s.tool_name, coalesce(s.response_model, s.model, '') AS price_model,
    s.model, s.provider, s.cost_usd, s.input_tokens, s.output_tokens, s.tool_decision, s.observation_tokens,
    s.dropped_tokens, s.truncated,
    CASE WHEN s.operation IN ($plan, $replan) THEN s.attributes END AS attributes
"""
ANALYTICS_OPERATIONS = "s.operation IN ($tool, $llm, $truncate, $step, $plan, $replan)"

# The pass's one read of the touched traces' spans: what the loads staged for traces the pass saw
# from their first span on (`touched.fresh`), the stored spans of the others, bounded by their extent.
TRACE_SPANS = """
CREATE OR REPLACE TEMP TABLE trace_spans AS
SELECT s.* FROM upkeep_spans s SEMI JOIN touched t ON t.fresh AND s.project = t.project AND s.trace_id = t.trace_id
"""
STORED_TRACE_SPANS = f"""
INSERT INTO trace_spans
SELECT {TRACE_SPAN_COLUMNS}
FROM spans s SEMI JOIN stale t ON s.project = t.project AND s.trace_id = t.trace_id
WHERE s.start_time BETWEEN $lo AND $hi
  AND s.trace_id IN (SELECT trace_id FROM stale)
  AND {ANALYTICS_OPERATIONS}
"""

# What the pass has to do: no tool span among the touched traces means no tool rows to (re)write, etc.
TRACE_SPAN_COUNTS = """
SELECT count(*) FILTER (WHERE operation = $tool), count(*) FILTER (WHERE operation = $llm),
    count(*) FILTER (WHERE operation IN ($plan, $replan))
FROM trace_spans
"""

# ---- LLM usage per (run, model) ----------------------------------------------------------------

_REPLACE_MODELS = [
    """
    DELETE FROM run_models USING stale t
    WHERE run_models.project = t.project AND run_models.trace_id = t.trace_id
      AND run_models.start_time BETWEEN $lo AND $hi
    """,
    """
    INSERT INTO run_models BY NAME
    SELECT n.project, n.trace_id, n.model, n.provider, min(n.start_time) AS start_time, count(*) AS llm_calls,
        coalesce(sum(n.input_tokens), 0) AS input_tokens, coalesce(sum(n.output_tokens), 0) AS output_tokens,
        sum(n.cost_usd) AS cost_usd, any_value(t.run_start) AS run_start, any_value(t.agent) AS agent,
        any_value(t.version) AS version, any_value(t.environment) AS environment, any_value(t.mode) AS mode
    FROM trace_spans n JOIN touched t USING (project, trace_id)
    WHERE n.operation = $llm
    GROUP BY n.project, n.trace_id, n.model, n.provider
    """,
]

# ---- tool calls: recomputed per touched trace -------------------------------------------------

# decision: a tool under a step span shares the cost of every LLM call (attempt) of that step with
# the step's other tools; a tool elsewhere (foreign clients) shares the last LLM call that ended
# before it started with the other tools that call chose.
# observation: a truncate span belongs to the latest sibling tool span that started before it.
_NEW_TOOL_CALLS = """
CREATE OR REPLACE TEMP TABLE new_tool_calls AS
WITH steps AS (SELECT project, trace_id, span_id FROM trace_spans WHERE operation = $step),
llm AS (
    SELECT l.project, l.trace_id, l.span_id, l.end_time, l.cost_usd, l.input_tokens, l.output_tokens,
        CASE WHEN s.span_id IS NULL THEN l.span_id ELSE l.parent_span_id END AS grp
    FROM trace_spans l
    LEFT JOIN steps s ON s.project = l.project AND s.trace_id = l.trace_id AND s.span_id = l.parent_span_id
    WHERE l.operation = $llm
),
tools AS (
    SELECT t.*, s.span_id IS NOT NULL AS under_step
    FROM trace_spans t
    LEFT JOIN steps s ON s.project = t.project AND s.trace_id = t.trace_id AND s.span_id = t.parent_span_id
    WHERE t.operation = $tool
),
chosen AS (
    SELECT t.project, t.trace_id, t.span_id, CASE WHEN t.under_step THEN t.parent_span_id ELSE l.grp END AS grp
    FROM tools t ASOF LEFT JOIN llm l
        ON t.project = l.project AND t.trace_id = l.trace_id AND t.start_time >= l.end_time
),
groups AS (
    SELECT project, trace_id, grp, sum(cost_usd) AS cost, sum(input_tokens) AS in_tok,
        sum(output_tokens) AS out_tok, count(*) AS calls
    FROM llm GROUP BY project, trace_id, grp
),
sharing AS (
    SELECT project, trace_id, grp, count(*) AS n FROM chosen WHERE grp IS NOT NULL GROUP BY project, trace_id, grp
),
decision AS (
    SELECT ch.project, ch.trace_id, ch.span_id, g.cost / s.n AS cost, g.in_tok / s.n AS in_tok,
        g.out_tok / s.n AS out_tok, g.calls / s.n AS calls
    FROM chosen ch
    JOIN sharing s ON s.project = ch.project AND s.trace_id = ch.trace_id AND s.grp = ch.grp
    JOIN groups g ON g.project = ch.project AND g.trace_id = ch.trace_id AND g.grp = ch.grp
),
truncs AS (
    SELECT tr.project, tr.trace_id, t.span_id, tr.observation_tokens, tr.dropped_tokens, tr.truncated
    FROM (SELECT * FROM trace_spans WHERE operation = $truncate) tr
    ASOF JOIN tools t
        ON tr.project = t.project AND tr.trace_id = t.trace_id AND tr.parent_span_id = t.parent_span_id
        AND tr.start_time >= t.start_time
),
obs AS (
    SELECT project, trace_id, span_id, sum(observation_tokens) AS tokens, sum(dropped_tokens) AS dropped,
        bool_or(truncated) AS truncated
    FROM truncs GROUP BY project, trace_id, span_id
)
SELECT t.project, t.trace_id, t.span_id, t.tool_name, t.start_time, t.end_time, t.duration_ms,
    r.run_start, r.agent, r.version, r.environment, r.mode,
    (t.status = 'ERROR' OR t.error_type IS NOT NULL) AS is_error, t.error_type, t.tool_decision AS decision,
    t.cost_usd AS direct_cost_usd, d.cost AS decision_cost_usd, d.calls AS decision_llm_calls,
    d.in_tok AS decision_input_tokens, d.out_tok AS decision_output_tokens,
    coalesce(o.tokens, t.observation_tokens) AS observation_tokens,
    CASE WHEN o.tokens IS NOT NULL THEN 'truncate' WHEN t.observation_tokens IS NOT NULL THEN 'estimate' END
        AS observation_source,
    o.truncated, o.dropped AS dropped_tokens
FROM tools t
JOIN touched r ON r.project = t.project AND r.trace_id = t.trace_id
LEFT JOIN decision d ON d.project = t.project AND d.trace_id = t.trace_id AND d.span_id = t.span_id
LEFT JOIN obs o ON o.project = t.project AND o.trace_id = t.trace_id AND o.span_id = t.span_id
"""

# carry: for each tool call and each model its run called later, how many calls of that model
# started at or after the tool call ended (`upto` counts calls starting up to a time, ties included).
_NEW_TOOL_CARRY = """
CREATE OR REPLACE TEMP TABLE new_tool_carry AS
WITH llm AS (
    SELECT project, trace_id, price_model, start_time,
        count(*) OVER (PARTITION BY project, trace_id, price_model ORDER BY start_time) AS upto,
        count(*) OVER (PARTITION BY project, trace_id, price_model) AS total
    FROM trace_spans WHERE operation = $llm
),
models AS (SELECT DISTINCT project, trace_id, price_model, total FROM llm),
pairs AS (
    SELECT t.project, t.trace_id, t.span_id, t.tool_name, t.start_time, t.end_time, t.observation_tokens,
        t.run_start, t.agent, t.version, t.environment, t.mode, m.price_model, m.total
    FROM new_tool_calls t JOIN models m ON m.project = t.project AND m.trace_id = t.trace_id
    WHERE t.observation_tokens > 0
)
SELECT p.project, p.trace_id, p.span_id, p.tool_name, p.start_time, p.run_start, p.agent, p.version,
    p.environment, p.mode, p.price_model AS model,
    p.total - coalesce(l.upto, 0) AS later_calls,
    p.observation_tokens * (p.total - coalesce(l.upto, 0)) AS resent_tokens
FROM pairs p ASOF LEFT JOIN llm l
    ON p.project = l.project AND p.trace_id = l.trace_id AND p.price_model = l.price_model
    AND p.end_time > l.start_time
WHERE p.total - coalesce(l.upto, 0) > 0
"""

# Stale traces' (see upkeep.py) old rows go first; fresh traces have none yet.
_DELETE_TOOLS = [
    """
    DELETE FROM tool_calls USING stale t
    WHERE tool_calls.project = t.project AND tool_calls.trace_id = t.trace_id
      AND tool_calls.start_time BETWEEN $lo AND $hi
    """,
    """
    DELETE FROM tool_carry USING stale t
    WHERE tool_carry.project = t.project AND tool_carry.trace_id = t.trace_id
      AND tool_carry.start_time BETWEEN $lo AND $hi
    """,
]
_INSERT_TOOLS = [
    "INSERT INTO tool_calls BY NAME SELECT * FROM new_tool_calls",
    "INSERT INTO tool_carry BY NAME SELECT * FROM new_tool_carry",
]

# The rollup's delta: the stale traces' stored rows (about to be replaced) subtracted, the touched
# traces' new rows added; applied in one MERGE that drops cells whose last source row left. Must run
# before _DELETE_TOOLS.
_OLD_ROWS = """
SELECT x.*, {sign} AS sign FROM {table} x SEMI JOIN stale t
    ON x.project = t.project AND x.trace_id = t.trace_id
WHERE x.start_time BETWEEN $lo AND $hi
"""
_ROLLUP_DELTA = tool_rollup_rows(
    f"{_OLD_ROWS.format(sign=-1, table='tool_calls')} UNION ALL BY NAME SELECT *, 1 AS sign FROM new_tool_calls",
    f"{_OLD_ROWS.format(sign=-1, table='tool_carry')} UNION ALL BY NAME SELECT *, 1 AS sign FROM new_tool_carry",
)
_CHANGED = " OR ".join(f"d.{n} <> 0" for n in TOOL_ROLLUP_NUMBERS)
_SAME_CELL = " AND ".join(f"r.{k} IS NOT DISTINCT FROM d.{k}" for k in TOOL_ROLLUP_KEYS)
_MERGE_ROLLUP = f"""
MERGE INTO tool_rollup r USING (SELECT * FROM ({_ROLLUP_DELTA}) d WHERE {_CHANGED}) d
ON {_SAME_CELL}
WHEN MATCHED AND r.entries + d.entries = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET
    {", ".join(f"{n} = r.{n} + d.{n}" for n in TOOL_ROLLUP_NUMBERS)},
    example_trace = CASE WHEN r.example_key IS NULL OR d.example_key > r.example_key THEN d.example_trace
        ELSE r.example_trace END,
    example_key = greatest(r.example_key, d.example_key)
WHEN NOT MATCHED THEN INSERT BY NAME
"""

_CLEANUP = "DROP TABLE IF EXISTS new_tool_calls;DROP TABLE IF EXISTS new_tool_carry"


def maintain(
    conn: duckdb.DuckDBPyConnection, stale_window: dict[str, Any] | None, tool_spans: int, llm_spans: int
) -> None:
    """Recompute run_models, tool_calls and tool_carry (and patch tool_rollup) for the traces in
    `touched`, from `trace_spans`. `stale_window` bounds the start times of the rows the `stale`
    traces already have (None: every touched trace is fresh, nothing to delete).

    Rows are derived only from LLM and tool spans, so traces without any have none to write.
    """
    window = stale_window or {"lo": None, "hi": None}  # an empty `stale` never reads them
    if llm_spans:
        delete, insert = _REPLACE_MODELS
        if stale_window is not None:
            execute(conn, delete, window)
        execute(conn, insert)
    if tool_spans:
        execute(conn, _NEW_TOOL_CALLS)
        execute(conn, _NEW_TOOL_CARRY)
        execute(conn, _MERGE_ROLLUP, window)
        if stale_window is not None:
            for statement in _DELETE_TOOLS:
                execute(conn, statement, window)
        for statement in _INSERT_TOOLS:
            conn.execute(statement)
        conn.execute(_CLEANUP)
