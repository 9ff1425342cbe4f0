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

Everything runs inside the loader's transaction (ingest/store/loading.py), on the writer thread.
"""

from __future__ import annotations

import re
from typing import Any

import duckdb

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

# ---- LLM usage per (run, model): merged by addition, like the runs row -----------------------

_BATCH_MODELS = """
CREATE OR REPLACE TEMP TABLE batch_models AS
SELECT project, trace_id, model, provider, min(start_time) AS start_time, count(*) AS llm_calls,
    coalesce(sum(input_tokens), 0) AS input_tokens, coalesce(sum(output_tokens), 0) AS output_tokens,
    sum(cost_usd) AS cost_usd
FROM new_spans WHERE operation = $llm
GROUP BY project, trace_id, model, provider
"""

_MERGE_MODELS = [
    """
    CREATE OR REPLACE TEMP TABLE merged_models AS
    WITH touched AS (SELECT DISTINCT project, trace_id FROM batch_models),
    both_sides AS (
        SELECT r.project, r.trace_id, r.model, r.provider, r.start_time, r.llm_calls, r.input_tokens,
            r.output_tokens, r.cost_usd
        FROM run_models r SEMI JOIN touched t ON r.project = t.project AND r.trace_id = t.trace_id
        UNION ALL
        SELECT project, trace_id, model, provider, start_time, llm_calls, input_tokens, output_tokens, cost_usd
        FROM batch_models
    )
    SELECT project, trace_id, model, provider, min(start_time) AS start_time,
        sum(llm_calls)::BIGINT AS llm_calls, sum(input_tokens)::BIGINT AS input_tokens,
        sum(output_tokens)::BIGINT AS output_tokens, sum(cost_usd) AS cost_usd
    FROM both_sides GROUP BY project, trace_id, model, provider
    """,
    """
    DELETE FROM run_models USING (SELECT DISTINCT project, trace_id FROM batch_models) t
    WHERE run_models.project = t.project AND run_models.trace_id = t.trace_id
    """,
    "INSERT INTO run_models BY NAME SELECT * FROM merged_models",
]

# The run's filter facts onto its run_models rows (the root may arrive after the LLM calls).
_RUN_MODELS_FACTS = """
UPDATE run_models SET run_start = m.start_time, agent = m.agent, version = m.version, environment = m.environment
FROM merged_runs m
WHERE run_models.project = m.project AND run_models.trace_id = m.trace_id
  AND run_models.start_time BETWEEN $lo AND $hi
"""

# ---- tool calls: recomputed per touched trace -------------------------------------------------

# Traces with tool calls that got any span this batch: a tool, LLM, truncate or step span can change
# a tool row, and the root can change the run facts (start, agent, version) copied onto them.
_TOOL_TRACES = """
CREATE OR REPLACE TEMP TABLE tool_traces AS
SELECT project, trace_id, span_start, span_end, start_time AS run_start, agent, version, environment
FROM merged_runs WHERE tool_calls > 0
"""

_TOOL_TRACE_SPANS = """
CREATE OR REPLACE TEMP TABLE tool_trace_spans AS
SELECT s.project, s.trace_id, s.span_id, s.parent_span_id, s.operation, s.start_time, s.end_time,
    s.duration_ms, s.status, s.error_type, s.tool_name, coalesce(s.response_model, s.model, '') AS price_model,
    s.cost_usd, s.input_tokens, s.output_tokens, s.tool_decision, s.observation_tokens, s.dropped_tokens,
    s.truncated
FROM spans s SEMI JOIN tool_traces t ON s.project = t.project AND s.trace_id = t.trace_id
WHERE s.start_time BETWEEN $lo AND $hi
  AND s.trace_id IN (SELECT trace_id FROM tool_traces)
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
JOIN tool_traces r ON r.project = t.project AND r.trace_id = t.trace_id
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
    DELETE FROM tool_calls USING tool_traces t
    WHERE tool_calls.project = t.project AND tool_calls.trace_id = t.trace_id
      AND tool_calls.start_time BETWEEN $lo AND $hi
    """,
    "INSERT INTO tool_calls BY NAME SELECT * FROM new_tool_calls",
    """
    DELETE FROM tool_carry USING tool_traces t
    WHERE tool_carry.project = t.project AND tool_carry.trace_id = t.trace_id
      AND tool_carry.start_time BETWEEN $lo AND $hi
    """,
    "INSERT INTO tool_carry BY NAME SELECT * FROM new_tool_carry",
]

_CLEANUP = [
    "DROP TABLE IF EXISTS batch_models",
    "DROP TABLE IF EXISTS merged_models",
    "DROP TABLE IF EXISTS tool_traces",
    "DROP TABLE IF EXISTS tool_trace_spans",
    "DROP TABLE IF EXISTS new_tool_calls",
    "DROP TABLE IF EXISTS new_tool_carry",
]


def maintain(conn: duckdb.DuckDBPyConnection) -> None:
    """Update run_models, tool_calls and tool_carry for the batch in `new_spans` / `merged_runs`.

    Call inside the load transaction after the spans are inserted and the runs rows merged.
    """
    execute(conn, _BATCH_MODELS)
    if conn.execute("SELECT count(*) FROM batch_models").fetchall()[0][0]:
        for statement in _MERGE_MODELS:
            execute(conn, statement)
    lo, hi = conn.execute("SELECT min(span_start), max(span_end) FROM merged_runs").fetchall()[0]
    if lo is not None and hi is not None:
        execute(conn, _RUN_MODELS_FACTS, {"lo": lo, "hi": hi})
    execute(conn, _TOOL_TRACES)
    lo, hi = conn.execute("SELECT min(span_start), max(span_end) FROM tool_traces").fetchall()[0]
    if lo is not None and hi is not None:
        window = {"lo": lo, "hi": hi}
        execute(conn, _TOOL_TRACE_SPANS, window)
        execute(conn, _NEW_TOOL_CALLS)
        execute(conn, _NEW_TOOL_CARRY)
        for statement in _REPLACE_TOOLS:
            execute(conn, statement, window)
    # On failure the loader rolls back, which drops these temp tables with everything else.
    for statement in _CLEANUP:
        conn.execute(statement)
