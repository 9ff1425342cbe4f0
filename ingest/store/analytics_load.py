"""Load-time analytics: derived span columns, LLM usage per run and model, and per-tool-call costs.

Why at load time: the per-tool cost split needs a tool span's siblings (the LLM calls that chose it,
its truncate span) and every later LLM call of its run. Doing that join at query time over 10M
spans costs seconds; doing it here, only for the traces a batch touched, costs milliseconds and
leaves the query API small GROUP BYs over `tool_calls`, `tool_carry` and `run_models`.

Why a whole trace is recomputed (not patched): spans of one trace arrive in any order and in any
number of batches (a chat span after its tool span, the truncate span in the next export). The
tool rows of a trace are a pure function of the trace's tool/llm/truncate/step spans, so each
batch that brings such a span recomputes that trace's rows from the stored spans. The read is
bounded by the trace's extent (runs.span_start/span_end) so zone maps skip the rest of the table.

Why `tool_rollup` is patched by deltas instead: a cell (hour x run facts x tool) sums many traces,
so recomputing it means reading all of them. Each recomputed trace's old tool rows are subtracted
and its new rows added (ingest/schema.py tool_rollup_rows), in the same MERGE.

Why so few statements: each costs a fixed ~3-20 ms on this machine whatever its size, and the
writer pays them in every load transaction. So one `touched` table says, per trace of the batch,
which upkeep it needs (no tool/LLM/truncate/step span and unchanged run facts: no tool upkeep; no
LLM span: no run_models merge), and merges are single MERGE statements.

Everything runs inside the loader's transaction (ingest/store/loading.py), on the writer thread.
"""

from __future__ import annotations

import re
from typing import Any

import duckdb

from ingest.schema import TOOL_ROLLUP_KEYS, TOOL_ROLLUP_NUMBERS, tool_rollup_rows, trace_key_sql
from ingest.store.signature import SQL_FUNCTION
from tracer import conventions as c
from tracer.conventions import OperationClass as Op

# Tokens per character when a foreign client's tool span gives only the result text (no
# truncate span): the usual ~4 characters per token of English text and JSON.
CHARS_PER_TOKEN = 4.0

_PARAM = re.compile(r"\$(\w+)")

PARAMS: dict[str, Any] = {
    "agent": Op.AGENT.value,
    "step": Op.STEP.value,
    "llm": Op.LLM.value,
    "tool": Op.TOOL.value,
    "truncate": Op.TRUNCATE.value,
    "decision_path": f'$."{c.TOOL_DECISION}"',
    "trunc_out_path": f'$."{c.TRUNCATE_OUTPUT_TOKENS}"',
    "trunc_dropped_path": f'$."{c.TRUNCATE_DROPPED_TOKENS}"',
    "trunc_flag_path": f'$."{c.TRUNCATE_TRUNCATED}"',
    "result_path": f'$."{c.GEN_AI_TOOL_CALL_RESULT}"',
    "oi_output_path": f'$."{c.OI_OUTPUT_VALUE}"',
    "tl_output_path": f'$."{c.TRACELOOP_ENTITY_OUTPUT}"',
    "exc_message_path": f'$[*].attributes."{c.EXCEPTION_MESSAGE}"',
    "chars_per_token": CHARS_PER_TOKEN,
}


def execute(conn: duckdb.DuckDBPyConnection, sql: str, extra: dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
    """Run `sql` with exactly the named parameters it references (DuckDB rejects unused ones)."""
    values = {**PARAMS, **(extra or {})}
    return conn.execute(sql, {name: values[name] for name in set(_PARAM.findall(sql))})


# Columns added to each incoming span before it is stored (ingest/schema.py ANALYTICS_SPAN_COLUMNS).
# JSON is parsed only for the few spans that need it (CASE), once, here.
DERIVED_SPAN_COLUMNS = f"""
    CASE WHEN operation = $tool THEN json_extract_string(attributes, $decision_path) END AS tool_decision,
    CASE
        WHEN operation = $truncate THEN TRY_CAST(json_extract_string(attributes, $trunc_out_path) AS BIGINT)
        WHEN operation = $tool THEN CAST(ceil(length(coalesce(
            json_extract_string(attributes, $result_path),
            json_extract_string(attributes, $oi_output_path),
            json_extract_string(attributes, $tl_output_path))) / $chars_per_token) AS BIGINT)
    END AS observation_tokens,
    CASE WHEN operation = $truncate THEN TRY_CAST(json_extract_string(attributes, $trunc_dropped_path) AS BIGINT)
        END AS dropped_tokens,
    CASE WHEN operation = $truncate THEN TRY_CAST(json_extract_string(attributes, $trunc_flag_path) AS BOOLEAN)
        END AS truncated,
    CASE WHEN status = 'ERROR' OR error_type IS NOT NULL THEN {SQL_FUNCTION}(coalesce(
            status_message,
            list_filter(json_extract_string(events, $exc_message_path), lambda m: m IS NOT NULL)[1]))
        END AS error_template
"""

# ---- which traces need which upkeep -------------------------------------------------------------

# One row per trace of the batch: its run facts (copied onto every analytics row of the run), whether
# they changed, and which tables need work. A trace's tool rows depend only on its tool, LLM, truncate
# and step spans and on the run facts; its run_models rows on its LLM spans and the facts. Batches
# without such spans (a root alone, budget checks) skip that upkeep entirely.
_TOUCHED = """
CREATE OR REPLACE TEMP TABLE touched AS
WITH n AS (
    SELECT project, trace_id, count(*) FILTER (WHERE operation = $llm) AS llm,
        count(*) FILTER (WHERE operation IN ($tool, $llm, $truncate, $step)) AS tool_related
    FROM new_spans GROUP BY project, trace_id
)
SELECT m.project, m.trace_id, m.span_start, m.span_end, m.start_time AS run_start, m.agent, m.version,
    m.environment, o.trace_id IS NULL AS is_new,
    (o.trace_id IS NULL OR m.start_time IS DISTINCT FROM o.start_time OR m.agent IS DISTINCT FROM o.agent
        OR m.version IS DISTINCT FROM o.version OR m.environment IS DISTINCT FROM o.environment) AS facts_changed,
    m.tool_calls > 0 AND (n.tool_related > 0 OR facts_changed) AS tools,
    n.llm > 0 AS new_models,
    coalesce(o.llm_calls, 0) > 0 AND facts_changed AS stale_models
FROM merged_runs m JOIN n USING (project, trace_id) LEFT JOIN old_runs o USING (project, trace_id)
"""

_PLAN = """
SELECT count(*) FILTER (WHERE is_new), count(*) FILTER (WHERE new_models),
    min(span_start) FILTER (WHERE new_models), max(span_end) FILTER (WHERE new_models),
    count(*) FILTER (WHERE stale_models), min(span_start) FILTER (WHERE stale_models),
    max(span_end) FILTER (WHERE stale_models),
    count(*) FILTER (WHERE tools), min(span_start) FILTER (WHERE tools), max(span_end) FILTER (WHERE tools)
FROM touched
"""

_TRACE_INDEX = f"""
INSERT INTO trace_index
SELECT coalesce({trace_key_sql("trace_id")}, 0), project, trace_id, span_start FROM touched WHERE is_new
"""

# ---- LLM usage per (run, model): merged by addition, like the runs row -----------------------

_MERGE_MODELS = """
MERGE INTO run_models r USING (
    SELECT n.project, n.trace_id, n.model, n.provider, min(n.start_time) AS start_time, count(*) AS llm_calls,
        coalesce(sum(n.input_tokens), 0) AS input_tokens, coalesce(sum(n.output_tokens), 0) AS output_tokens,
        sum(n.cost_usd) AS cost_usd, any_value(t.run_start) AS run_start, any_value(t.agent) AS agent,
        any_value(t.version) AS version, any_value(t.environment) AS environment
    FROM new_spans n JOIN touched t USING (project, trace_id)
    WHERE n.operation = $llm AND t.new_models
    GROUP BY n.project, n.trace_id, n.model, n.provider
) b
ON r.project = b.project AND r.trace_id = b.trace_id AND r.model IS NOT DISTINCT FROM b.model
    AND r.provider IS NOT DISTINCT FROM b.provider AND r.start_time BETWEEN $lo AND $hi
WHEN MATCHED THEN UPDATE SET
    start_time = least(r.start_time, b.start_time), llm_calls = r.llm_calls + b.llm_calls,
    input_tokens = r.input_tokens + b.input_tokens, output_tokens = r.output_tokens + b.output_tokens,
    cost_usd = CASE WHEN r.cost_usd IS NULL THEN b.cost_usd WHEN b.cost_usd IS NULL THEN r.cost_usd
        ELSE r.cost_usd + b.cost_usd END,
    run_start = b.run_start, agent = b.agent, version = b.version, environment = b.environment
WHEN NOT MATCHED THEN INSERT BY NAME
"""

# The run's filter facts onto its older run_models rows (the root may arrive after the LLM calls).
_RUN_MODELS_FACTS = """
UPDATE run_models SET run_start = m.run_start, agent = m.agent, version = m.version, environment = m.environment
FROM touched m
WHERE m.stale_models AND run_models.project = m.project AND run_models.trace_id = m.trace_id
  AND run_models.start_time BETWEEN $lo AND $hi
"""

# ---- tool calls: recomputed per touched trace -------------------------------------------------

_TOOL_TRACE_SPANS = """
CREATE OR REPLACE TEMP TABLE tool_trace_spans AS
SELECT s.project, s.trace_id, s.span_id, s.parent_span_id, s.operation, s.start_time, s.end_time,
    s.duration_ms, s.status, s.error_type, s.tool_name, coalesce(s.response_model, s.model, '') AS price_model,
    s.cost_usd, s.input_tokens, s.output_tokens, s.tool_decision, s.observation_tokens, s.dropped_tokens,
    s.truncated
FROM spans s SEMI JOIN touched t ON t.tools AND s.project = t.project AND s.trace_id = t.trace_id
WHERE s.start_time BETWEEN $lo AND $hi
  AND s.trace_id IN (SELECT trace_id FROM touched WHERE tools)
  AND s.operation IN ($tool, $llm, $truncate, $step)
"""

# decision: a tool under a step span shares the cost of every LLM call (attempt) of that step with
# the step's other tools; a tool elsewhere (foreign clients) shares the last LLM call that ended
# before it started with the other tools that call chose.
# observation: a truncate span belongs to the latest sibling tool span that started before it.
_NEW_TOOL_CALLS = """
CREATE OR REPLACE TEMP TABLE new_tool_calls AS
WITH steps AS (SELECT project, trace_id, span_id FROM tool_trace_spans WHERE operation = $step),
llm AS (
    SELECT l.project, l.trace_id, l.span_id, l.end_time, l.cost_usd, l.input_tokens, l.output_tokens,
        CASE WHEN s.span_id IS NULL THEN l.span_id ELSE l.parent_span_id END AS grp
    FROM tool_trace_spans l
    LEFT JOIN steps s ON s.project = l.project AND s.trace_id = l.trace_id AND s.span_id = l.parent_span_id
    WHERE l.operation = $llm
),
tools AS (
    SELECT t.*, s.span_id IS NOT NULL AS under_step
    FROM tool_trace_spans t
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
    FROM (SELECT * FROM tool_trace_spans WHERE operation = $truncate) tr
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
    r.run_start, r.agent, r.version, r.environment,
    (t.status = 'ERROR' OR t.error_type IS NOT NULL) AS is_error, t.error_type, t.tool_decision AS decision,
    t.cost_usd AS direct_cost_usd, d.cost AS decision_cost_usd, d.calls AS decision_llm_calls,
    d.in_tok AS decision_input_tokens, d.out_tok AS decision_output_tokens,
    coalesce(o.tokens, t.observation_tokens) AS observation_tokens,
    CASE WHEN o.tokens IS NOT NULL THEN 'truncate' WHEN t.observation_tokens IS NOT NULL THEN 'estimate' END
        AS observation_source,
    o.truncated, o.dropped AS dropped_tokens
FROM tools t
JOIN touched r ON r.project = t.project AND r.trace_id = t.trace_id AND r.tools
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
    FROM tool_trace_spans WHERE operation = $llm
),
models AS (SELECT DISTINCT project, trace_id, price_model, total FROM llm),
pairs AS (
    SELECT t.project, t.trace_id, t.span_id, t.tool_name, t.start_time, t.end_time, t.observation_tokens,
        t.run_start, t.agent, t.version, t.environment, m.price_model, m.total
    FROM new_tool_calls t JOIN models m ON m.project = t.project AND m.trace_id = t.trace_id
    WHERE t.observation_tokens > 0
)
SELECT p.project, p.trace_id, p.span_id, p.tool_name, p.start_time, p.run_start, p.agent, p.version,
    p.environment, p.price_model AS model,
    p.total - coalesce(l.upto, 0) AS later_calls,
    p.observation_tokens * (p.total - coalesce(l.upto, 0)) AS resent_tokens
FROM pairs p ASOF LEFT JOIN llm l
    ON p.project = l.project AND p.trace_id = l.trace_id AND p.price_model = l.price_model
    AND p.end_time > l.start_time
WHERE p.total - coalesce(l.upto, 0) > 0
"""

_REPLACE_TOOLS = [
    """
    DELETE FROM tool_calls USING touched t
    WHERE t.tools AND tool_calls.project = t.project AND tool_calls.trace_id = t.trace_id
      AND tool_calls.start_time BETWEEN $lo AND $hi
    """,
    "INSERT INTO tool_calls BY NAME SELECT * FROM new_tool_calls",
    """
    DELETE FROM tool_carry USING touched t
    WHERE t.tools AND tool_carry.project = t.project AND tool_carry.trace_id = t.trace_id
      AND tool_carry.start_time BETWEEN $lo AND $hi
    """,
    "INSERT INTO tool_carry BY NAME SELECT * FROM new_tool_carry",
]

# The rollup's delta: the touched traces' stored rows (about to be replaced) subtracted, their new rows
# added; applied in one MERGE that drops cells whose last source row left. Must run before _REPLACE_TOOLS.
_OLD_ROWS = """
SELECT x.*, {sign} AS sign FROM {table} x SEMI JOIN touched t
    ON t.tools AND x.project = t.project AND x.trace_id = t.trace_id
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

_CLEANUP = ";".join(
    f"DROP TABLE IF EXISTS {table}" for table in ("touched", "tool_trace_spans", "new_tool_calls", "new_tool_carry")
)


def maintain(conn: duckdb.DuckDBPyConnection) -> None:
    """Update trace_index, run_models, tool_calls, tool_carry and tool_rollup for the batch in
    `new_spans` / `merged_runs` / `old_runs`.

    Call inside the load transaction after the spans are inserted and the runs rows merged. Each
    statement costs a fixed ~5-20 ms here whatever its size, so work a batch does not need is skipped.
    """
    execute(conn, _TOUCHED)
    (new_runs, models, m_lo, m_hi, stale, s_lo, s_hi, tools, t_lo, t_hi) = conn.execute(_PLAN).fetchall()[0]
    if new_runs:
        conn.execute(_TRACE_INDEX)
    if models:
        execute(conn, _MERGE_MODELS, {"lo": m_lo, "hi": m_hi})
    if stale:
        execute(conn, _RUN_MODELS_FACTS, {"lo": s_lo, "hi": s_hi})
    if tools:
        window = {"lo": t_lo, "hi": t_hi}
        execute(conn, _TOOL_TRACE_SPANS, window)
        execute(conn, _NEW_TOOL_CALLS)
        execute(conn, _NEW_TOOL_CARRY)
        execute(conn, _MERGE_ROLLUP, window)
        for statement in _REPLACE_TOOLS:
            execute(conn, statement, window)
    # On failure the loader rolls back, which drops these temp tables with everything else.
    conn.execute(_CLEANUP)
