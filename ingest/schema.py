"""DuckDB schema of the span store, as an ordered list of migrations applied at startup.

Why no PRIMARY KEY / UNIQUE constraints: DuckDB can refuse to reopen a database whose WAL holds
index work after a hard kill (duckdb issues 15836, 18732). Dedup of (project, trace_id, span_id)
is done by anti-join when loading, so a crash can never brick the store.

Columns promoted out of the attributes JSON are the ones dashboards filter and aggregate on;
reading them from JSON is ~20x slower at 10M spans.
"""

from __future__ import annotations

from tracer import conventions as c
from tracer.conventions import OperationClass as Op
from tracer.conventions import ToolDecision, ToolErrorCode

SPANS_DDL = """
CREATE TABLE IF NOT EXISTS spans (
    project          VARCHAR   NOT NULL,
    trace_id         VARCHAR   NOT NULL,   -- 32 lowercase hex chars
    span_id          VARCHAR   NOT NULL,   -- 16 lowercase hex chars
    parent_span_id   VARCHAR,              -- NULL for a root span
    service          VARCHAR,              -- resource service.name
    scope            VARCHAR,              -- instrumentation scope name
    name             VARCHAR   NOT NULL,
    kind             VARCHAR   NOT NULL,   -- UNSPECIFIED INTERNAL SERVER CLIENT PRODUCER CONSUMER
    start_time       TIMESTAMP NOT NULL,   -- UTC, microseconds
    end_time         TIMESTAMP NOT NULL,
    duration_ms      DOUBLE    NOT NULL,
    status           VARCHAR   NOT NULL,   -- UNSET OK ERROR
    status_message   VARCHAR,
    operation        VARCHAR   NOT NULL,   -- tracer.conventions.OperationClass
    agent_name       VARCHAR,
    agent_version    VARCHAR,
    model            VARCHAR,              -- request model (response model when none requested)
    response_model   VARCHAR,
    provider         VARCHAR,
    input_tokens     BIGINT,
    output_tokens    BIGINT,
    cache_read_tokens BIGINT,
    cost_usd         DOUBLE,
    cost_source      VARCHAR,              -- 'span' (client sent it) | 'price_table' | NULL
    tool_name        VARCHAR,
    error_type       VARCHAR,
    step_index       INTEGER,
    stop_reason      VARCHAR,
    run_ok           BOOLEAN,
    run_steps        INTEGER,
    conversation_id  VARCHAR,
    user_id          VARCHAR,
    environment      VARCHAR,              -- resource deployment.environment(.name)
    run_mode         VARCHAR,
    attributes       JSON,                 -- every attribute, promoted or not
    events           JSON,                 -- list of {name, time, attributes}
    resource         JSON,                 -- resource attributes
    ingested_at      TIMESTAMP NOT NULL
)
"""

RUNS_DDL = """
CREATE TABLE IF NOT EXISTS runs (
    project          VARCHAR   NOT NULL,
    trace_id         VARCHAR   NOT NULL,
    root_span_id     VARCHAR,              -- the invoke_agent span, or the trace's root
    name             VARCHAR,
    agent            VARCHAR,
    version          VARCHAR,
    service          VARCHAR,
    environment      VARCHAR,
    user_id          VARCHAR,
    conversation_id  VARCHAR,
    mode             VARCHAR,
    start_time       TIMESTAMP,
    end_time         TIMESTAMP,
    duration_ms      DOUBLE,
    ok               BOOLEAN,
    stop_reason      VARCHAR,
    steps            INTEGER,
    llm_calls        INTEGER,
    tool_calls       INTEGER,
    tool_errors      INTEGER,
    error_spans      INTEGER,
    input_tokens     BIGINT,
    output_tokens    BIGINT,
    cost_usd         DOUBLE,
    models           VARCHAR[],
    failure_signature VARCHAR,
    eval_run_id      VARCHAR,
    eval_case_id     VARCHAR,
    span_count       INTEGER,
    updated_at       TIMESTAMP NOT NULL
)
"""

MIGRATIONS_DDL = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER   NOT NULL,
    applied_at TIMESTAMP NOT NULL
)
"""

# Where the loader got to in the write-ahead spool. Updated in the SAME transaction as the spans it
# loaded, so after a crash the replay resumes exactly after the last committed record.
SPOOL_POSITION_DDL = """
CREATE TABLE IF NOT EXISTS spool_position (
    segment    BIGINT    NOT NULL,
    "offset"   BIGINT    NOT NULL,
    updated_at TIMESTAMP NOT NULL
)
"""

# Incremental runs maintenance needs to know which span the row's root-derived fields came from
# ('agent' = invoke_agent span, 'root' = parentless span of a foreign client, NULL = none seen yet)
# and the extent of every span seen, to fall back on before the root arrives.
RUNS_ROOT_TRACKING = [
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS root_kind VARCHAR",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS span_start TIMESTAMP",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS span_end TIMESTAMP",
]

# Analytics (failure clusters, per-tool stats, cost attribution): facts derived at load time by
# ingest/store/analytics_load.py so that those queries never scan the spans table or parse JSON.
ANALYTICS_SPAN_COLUMNS = [
    # tool spans: steplens.tool.decision
    "ALTER TABLE spans ADD COLUMN IF NOT EXISTS tool_decision VARCHAR",
    # truncate spans: steplens.truncate.output_tokens; tool spans: estimate from the result's length
    "ALTER TABLE spans ADD COLUMN IF NOT EXISTS observation_tokens BIGINT",
    # truncate spans: steplens.truncate.dropped_tokens / .truncated
    "ALTER TABLE spans ADD COLUMN IF NOT EXISTS dropped_tokens BIGINT",
    "ALTER TABLE spans ADD COLUMN IF NOT EXISTS truncated BOOLEAN",
    # error spans: status message (or exception.message) with variable parts masked
    "ALTER TABLE spans ADD COLUMN IF NOT EXISTS error_template VARCHAR",
]

# The run's last error (the latest-ending failed span, leaves before containers), kept up to date
# incrementally like the rest of the runs row; `failure_signature` is derived from it.
RUNS_LAST_ERROR = [
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS last_error_rank INTEGER",  # 2 inner span, 1 step, 0 root/agent
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS last_error_at TIMESTAMP",  # its end time
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS last_error_span_id VARCHAR",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS last_error_kind VARCHAR",  # OperationClass
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS last_error_tool VARCHAR",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS last_error_type VARCHAR",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS last_error_template VARCHAR",
]

# One row per tool span with its three cost parts' inputs; recomputed per trace when the trace
# gets new tool/llm/truncate/step spans (decision and observation need the siblings).
TOOL_CALLS_DDL = """
CREATE TABLE IF NOT EXISTS tool_calls (
    project            VARCHAR   NOT NULL,
    trace_id           VARCHAR   NOT NULL,
    span_id            VARCHAR   NOT NULL,
    tool_name          VARCHAR,
    start_time         TIMESTAMP NOT NULL,
    end_time           TIMESTAMP NOT NULL,
    duration_ms        DOUBLE,
    is_error           BOOLEAN   NOT NULL,
    error_type         VARCHAR,
    decision           VARCHAR,              -- steplens.tool.decision
    direct_cost_usd    DOUBLE,               -- the tool span's own cost
    decision_cost_usd  DOUBLE,               -- its share of the LLM call(s) that chose it
    decision_llm_calls DOUBLE,               -- its share of those calls (1/k each)
    decision_input_tokens  DOUBLE,
    decision_output_tokens DOUBLE,
    observation_tokens BIGINT,               -- tokens of its observation as the model saw it
    observation_source VARCHAR,              -- 'truncate' | 'estimate' | NULL (unknown)
    truncated          BOOLEAN,
    dropped_tokens     BIGINT
)
"""

# Observation tokens re-sent to later LLM calls, per tool span and per model of those calls:
# priced at query time with the price table's input price (so a price update applies to history).
TOOL_CARRY_DDL = """
CREATE TABLE IF NOT EXISTS tool_carry (
    project            VARCHAR   NOT NULL,
    trace_id           VARCHAR   NOT NULL,
    span_id            VARCHAR   NOT NULL,
    tool_name          VARCHAR,
    start_time         TIMESTAMP NOT NULL,
    model              VARCHAR   NOT NULL,   -- model of the later calls ('' when unknown)
    later_calls        BIGINT    NOT NULL,
    resent_tokens      BIGINT    NOT NULL    -- observation_tokens * later_calls
)
"""

# LLM usage per run and model, merged incrementally: cost attribution by model/provider without
# scanning the spans table.
RUN_MODELS_DDL = """
CREATE TABLE IF NOT EXISTS run_models (
    project            VARCHAR   NOT NULL,
    trace_id           VARCHAR   NOT NULL,
    model              VARCHAR,
    provider           VARCHAR,
    start_time         TIMESTAMP NOT NULL,   -- first call's start
    llm_calls          BIGINT    NOT NULL,
    input_tokens       BIGINT    NOT NULL,
    output_tokens      BIGINT    NOT NULL,
    cost_usd           DOUBLE
)
"""

ANALYTICS_MIGRATION = [*ANALYTICS_SPAN_COLUMNS, *RUNS_LAST_ERROR, TOOL_CALLS_DDL, TOOL_CARRY_DDL, RUN_MODELS_DDL]

# The run's filter facts copied onto its analytics rows (kept in step by the loader whenever the
# trace gets a span), so /api/tools and /api/cost filter those tables directly: a join with runs
# on 32-char trace ids cost more than the aggregate itself at millions of rows.
ANALYTICS_RUN_FACTS = [
    f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {sql_type}"
    for table in ("tool_calls", "tool_carry", "run_models")
    for column, sql_type in (
        ("run_start", "TIMESTAMP"), ("agent", "VARCHAR"), ("version", "VARCHAR"), ("environment", "VARCHAR")
    )
]

# Alerting (ingest.alerts): the current state of every (rule, agent) pair, so firing/resolved and the
# re-notification cooldown survive a restart, and the history of what was notified. Written only on
# the store's writer thread (SpanStore.run_write).
ALERT_STATE_DDL = """
CREATE TABLE IF NOT EXISTS alert_state (
    rule             VARCHAR   NOT NULL,   -- the rule's name in steplens.toml
    subject          VARCHAR   NOT NULL,   -- what it fired for: an agent name, or '*'
    status           VARCHAR   NOT NULL,   -- firing | ok
    since            TIMESTAMP NOT NULL,   -- when the status last changed
    last_notified    TIMESTAMP,            -- last firing/re-notification sent (cooldown clock)
    last_evaluated   TIMESTAMP NOT NULL,
    value            DOUBLE,               -- the metric's current value when last evaluated
    summary          VARCHAR
)
"""

ALERT_EVENTS_DDL = """
CREATE TABLE IF NOT EXISTS alert_events (
    event_id         VARCHAR   NOT NULL,   -- uuid4 hex
    time             TIMESTAMP NOT NULL,
    rule             VARCHAR   NOT NULL,
    subject          VARCHAR   NOT NULL,
    kind             VARCHAR   NOT NULL,   -- firing | renotify | resolved
    severity         VARCHAR   NOT NULL,
    summary          VARCHAR   NOT NULL,
    value            DOUBLE,
    details          JSON,                 -- the finding behind it (values, p-value, effect size)
    evidence         VARCHAR[],            -- trace ids of example runs
    channels         VARCHAR[]             -- channels the notification was queued to
)
"""

# Replanning analytics (GET /api/replanning): one row per plan/replan span of plan-and-execute runs,
# with the span's plan attributes out of the JSON and the usage of the LLM calls under it (the
# planner's / replanner's own token cost). Maintained at load time by ingest/store/plan_load.py,
# recomputed per touched plan/replan span, so a chat span arriving before or after its parent counts.
PLAN_SPANS_DDL = """
CREATE TABLE IF NOT EXISTS plan_spans (
    project              VARCHAR   NOT NULL,
    trace_id             VARCHAR   NOT NULL,
    span_id              VARCHAR   NOT NULL,
    operation            VARCHAR   NOT NULL,   -- OperationClass plan | replan
    start_time           TIMESTAMP NOT NULL,
    end_time             TIMESTAMP NOT NULL,
    status               VARCHAR   NOT NULL,   -- ERROR: no usable plan came back (format_error)
    error_type           VARCHAR,
    plan_version         INTEGER,              -- steplens.plan.version (plan: 1; admitted replan: the new one)
    plan_steps           INTEGER,              -- steplens.plan.steps
    granularity          VARCHAR,              -- steplens.replan.granularity (patch, tail, global)
    cause                VARCHAR,              -- steplens.replan.cause
    failed_step          VARCHAR,              -- steplens.replan.failed_step
    verdict              VARCHAR,              -- steplens.replan.verdict (NULL: the reply was unusable)
    from_version         INTEGER,
    to_version           INTEGER,
    reexecution_cost_usd DOUBLE,               -- steplens.replan.reexecution_cost_usd (global replans)
    llm_calls            BIGINT    NOT NULL,   -- chat spans directly under this span
    input_tokens         BIGINT    NOT NULL,
    output_tokens        BIGINT    NOT NULL,
    llm_cost_usd         DOUBLE                -- NULL when none of those calls is priced
)
"""


def _attr(name: str, sql_type: str) -> str:
    """A typed attribute of spans row `s`; `name` is a conventions constant, never user input.
    Integers go through DOUBLE so that a client sending `2.0` for a version still counts."""
    text = f"json_extract_string(s.attributes, '$.\"{name}\"')"
    if sql_type in ("INTEGER", "BIGINT"):
        return f"TRY_CAST(TRY_CAST({text} AS DOUBLE) AS {sql_type})"
    if sql_type.endswith("[]"):  # an array attribute: the JSON list itself (a scalar gives NULL)
        return f"TRY_CAST(json_extract(s.attributes, '$.\"{name}\"') AS {sql_type})"
    return f"TRY_CAST({text} AS {sql_type})"


# The plan_spans row of spans row `s` with usage row `u` (LEFT JOINed; NULL when no LLM call under it),
# as of schema version 5 (the backfill of that version inserts exactly these).
PLAN_SPAN_COLUMNS_V5 = f"""
    s.project, s.trace_id, s.span_id, s.operation, s.start_time, s.end_time, s.status, s.error_type,
    {_attr(c.PLAN_VERSION, "INTEGER")} AS plan_version,
    {_attr(c.PLAN_STEPS, "INTEGER")} AS plan_steps,
    {_attr(c.REPLAN_GRANULARITY, "VARCHAR")} AS granularity,
    {_attr(c.REPLAN_CAUSE, "VARCHAR")} AS cause,
    {_attr(c.REPLAN_FAILED_STEP, "VARCHAR")} AS failed_step,
    {_attr(c.REPLAN_VERDICT, "VARCHAR")} AS verdict,
    {_attr(c.REPLAN_FROM_VERSION, "INTEGER")} AS from_version,
    {_attr(c.REPLAN_TO_VERSION, "INTEGER")} AS to_version,
    {_attr(c.REPLAN_REEXECUTION_COST_USD, "DOUBLE")} AS reexecution_cost_usd,
    coalesce(u.llm_calls, 0) AS llm_calls,
    coalesce(u.input_tokens, 0) AS input_tokens,
    coalesce(u.output_tokens, 0) AS output_tokens,
    u.llm_cost_usd
"""

# What the replanner was given and what it changed (replan spans; NULL on plan spans and on spans
# of clients that do not send them): column -> (conventions attribute, SQL type).
PLAN_SPAN_CONTEXT: dict[str, tuple[str, str]] = {
    "route_rule": (c.REPLAN_ROUTE_RULE, "VARCHAR"),
    "route_escalated": (c.REPLAN_ROUTE_ESCALATED, "BOOLEAN"),
    "escalation_reset": (c.REPLAN_ESCALATION_RESET, "BOOLEAN"),
    "lessons": (c.REPLAN_LESSONS, "VARCHAR[]"),
    "variables_clean": (c.REPLAN_VARIABLES_CLEAN, "INTEGER"),
    "variables_stale": (c.REPLAN_VARIABLES_STALE, "INTEGER"),
    "variables_void": (c.REPLAN_VARIABLES_VOID, "INTEGER"),
    "kept": (c.REPLAN_KEPT, "VARCHAR[]"),
    "dropped": (c.REPLAN_DROPPED, "VARCHAR[]"),
    "added": (c.REPLAN_ADDED, "VARCHAR[]"),
    "tool_calls": (c.REPLAN_TOOL_CALLS, "INTEGER"),
    "budget_used_tokens": (c.REPLAN_BUDGET_USED_TOKENS, "BIGINT"),
    "refusal": (c.REPLAN_REFUSAL, "VARCHAR"),
}
PLAN_SPAN_COLUMNS = PLAN_SPAN_COLUMNS_V5 + "".join(
    f",\n    {_attr(attr, sql_type)} AS {column}" for column, (attr, sql_type) in PLAN_SPAN_CONTEXT.items()
)
# The columns added to plan_spans, and their values for the rows stored before them.
PLAN_SPANS_CONTEXT_MIGRATION = [
    *(f"ALTER TABLE plan_spans ADD COLUMN IF NOT EXISTS {column} {sql_type}"
      for column, (_, sql_type) in PLAN_SPAN_CONTEXT.items()),
    "UPDATE plan_spans SET " + ", ".join(f"{column} = {_attr(attr, sql_type)}"
                                          for column, (attr, sql_type) in PLAN_SPAN_CONTEXT.items())
    + " FROM spans s WHERE s.project = plan_spans.project AND s.trace_id = plan_spans.trace_id"
      " AND s.span_id = plan_spans.span_id",
]

# LLM usage per parent span, aggregated from spans rows `l` (chat spans).
PLAN_SPAN_USAGE = """
    l.project, l.trace_id, l.parent_span_id AS span_id, count(*) AS llm_calls,
    coalesce(sum(l.input_tokens), 0) AS input_tokens, coalesce(sum(l.output_tokens), 0) AS output_tokens,
    sum(l.cost_usd) AS llm_cost_usd
"""

# Databases that stored plan-and-execute runs before version 5 get their rows once, here.
PLAN_SPANS_BACKFILL = f"""
INSERT INTO plan_spans BY NAME
WITH p AS (SELECT * FROM spans WHERE operation IN ('{Op.PLAN.value}', '{Op.REPLAN.value}')),
u AS (
    SELECT {PLAN_SPAN_USAGE}
    FROM spans l SEMI JOIN p ON l.project = p.project AND l.trace_id = p.trace_id AND l.parent_span_id = p.span_id
    WHERE l.operation = '{Op.LLM.value}'
    GROUP BY l.project, l.trace_id, l.parent_span_id
)
SELECT {PLAN_SPAN_COLUMNS_V5}
FROM p s LEFT JOIN u ON u.project = s.project AND u.trace_id = s.trace_id AND u.span_id = s.span_id
"""

# Human approvals of agents' risky tool calls (ingest/approvals.py, /api/approvals). Written only on
# the store's writer thread, so a pending approval is decided exactly once.
APPROVALS_DDL = """
CREATE TABLE IF NOT EXISTS approvals (
    approval_id      VARCHAR   NOT NULL,   -- uuid4 hex
    project          VARCHAR   NOT NULL,   -- the registering key's project
    status           VARCHAR   NOT NULL,   -- pending | approved | rejected | expired
    tool_name        VARCHAR   NOT NULL,
    arguments        JSON,
    risk             VARCHAR,              -- low | medium | high
    agent            VARCHAR,
    agent_version    VARCHAR,
    trace_id         VARCHAR,              -- the run waiting for it
    call_id          VARCHAR,              -- gen_ai.tool.call.id
    summary          VARCHAR,
    wait_s           DOUBLE,               -- how long the agent said it would wait
    requested_by     VARCHAR,              -- the key's name (never the key)
    created_at       TIMESTAMP NOT NULL,
    decided_at       TIMESTAMP,
    decided_by       VARCHAR,
    reason           VARCHAR
)
"""


# Per-tool stats rolled up per hour of the run's start and per run facts (project, agent, version,
# environment, tool), kept up to date at load time by ingest/store/analytics_load.py, so /api/tools and
# /api/cost?group_by=tool sum a few thousand cells instead of every tool call in range (1.7M at 10M spans).
# Why keyed by the hour of the RUN's start: the API filters runs by their start, and a run lies in
# exactly one bucket, so per-cell distinct run counts add up exactly across buckets. Partial hours at
# the edges of a range are aggregated from tool_calls by the query. Latency percentiles are not rolled
# up: they are computed exactly from tool_calls (ingest/queries/tools.py).
# One table, three kinds of rows (`part`): 'calls' (the counters below), 'error' (calls per error type,
# key = error type) and 'carry' (re-sent observation tokens, key = model), so one MERGE maintains all.
# Cost and fractional columns are DECIMAL: deltas (subtract the trace's old rows, add its new ones)
# then cancel exactly, whatever order and batching the spans came in.
TOOL_ROLLUP_DDL = """
CREATE TABLE IF NOT EXISTS tool_rollup (
    start_time             TIMESTAMP NOT NULL,   -- the bucket: hour of the run's start
    project                VARCHAR   NOT NULL,
    agent                  VARCHAR,
    version                VARCHAR,
    environment            VARCHAR,
    tool_name              VARCHAR,
    part                   VARCHAR   NOT NULL,   -- calls | error | carry
    part_key               VARCHAR   NOT NULL,   -- '' (calls), the error type (error), the model (carry)
    entries                BIGINT    NOT NULL,   -- source rows summed here; the cell is deleted at 0
    value                  BIGINT    NOT NULL,   -- calls: calls; error: calls with that type; carry: resent tokens
    runs                   BIGINT,               -- calls part only from here on
    errors                 BIGINT,
    timeouts               BIGINT,
    denials                BIGINT,
    truncated_calls        BIGINT,
    dropped_tokens         BIGINT,
    observation_tokens     BIGINT,
    estimated_observations BIGINT,
    direct                 DECIMAL(38, 12),
    decision               DECIMAL(38, 12),
    decision_llm_calls     DECIMAL(38, 12),
    decision_input_tokens  DECIMAL(38, 12),
    decision_output_tokens DECIMAL(38, 12),
    example_key            BIGINT,               -- (is_error << 60) + start epoch us of the example call
    example_trace          VARCHAR               -- latest failing call's trace, else latest call's
)
"""

TOOL_ROLLUP_NUMBERS = (
    "entries", "value", "runs", "errors", "timeouts", "denials", "truncated_calls", "dropped_tokens",
    "observation_tokens", "estimated_observations", "direct", "decision", "decision_llm_calls",
    "decision_input_tokens", "decision_output_tokens",
)  # fmt: skip
# The run facts a rollup cell is keyed by. Version 8's backfill was written with the first three;
# `mode` joined them later (ANALYTICS_RUN_MODE), so that migration keeps its own tuple.
V8_ROLLUP_FACTS = ("agent", "version", "environment")
ROLLUP_FACTS = (*V8_ROLLUP_FACTS, "mode")
TOOL_ROLLUP_KEYS = ("start_time", "project", *ROLLUP_FACTS, "tool_name", "part", "part_key")


def tool_rollup_rows(calls: str, carry: str, facts: tuple[str, ...] = ROLLUP_FACTS) -> str:
    """SELECT of tool_rollup-shaped rows (one per cell) from `calls` (a relation with tool_calls'
    columns plus `sign`: +1 adds the row, -1 removes it) and `carry` (tool_carry's columns + `sign`).

    Used for the load-time deltas, the migration's backfill and the query's partial edge hours, so the
    three can never disagree. `calls`/`carry` are SQL of this package, never user input; `facts` are
    the run facts a cell is keyed by (a shipped migration passes the ones of its time).
    """
    dec = "DECIMAL(38, 12)"
    cols = ", ".join(facts)
    keys = f"bucket, project, {cols}, tool_name"
    return f"""
WITH c AS (
    SELECT *, date_trunc('hour', coalesce(run_start, start_time)) AS bucket,
        (is_error::BIGINT << 60) + epoch_us(start_time) AS ex_key
    FROM ({calls})
),
k AS (SELECT *, date_trunc('hour', coalesce(run_start, start_time)) AS bucket FROM ({carry}))
SELECT bucket AS start_time, project, {cols}, tool_name, 'calls' AS part, '' AS part_key,
    sum(sign)::BIGINT AS entries, sum(sign)::BIGINT AS value,
    (count(DISTINCT trace_id) FILTER (WHERE sign > 0) - count(DISTINCT trace_id) FILTER (WHERE sign < 0))::BIGINT
        AS runs,
    coalesce(sum(sign) FILTER (WHERE is_error), 0)::BIGINT AS errors,
    coalesce(sum(sign) FILTER (WHERE error_type = '{ToolErrorCode.TIMEOUT.value}'), 0)::BIGINT AS timeouts,
    coalesce(sum(sign) FILTER (
        WHERE decision = '{ToolDecision.DENIED.value}' OR error_type = '{ToolErrorCode.DENIED.value}'), 0)::BIGINT
        AS denials,
    coalesce(sum(sign) FILTER (WHERE truncated), 0)::BIGINT AS truncated_calls,
    coalesce(sum(sign * dropped_tokens), 0)::BIGINT AS dropped_tokens,
    coalesce(sum(sign * observation_tokens), 0)::BIGINT AS observation_tokens,
    coalesce(sum(sign) FILTER (WHERE observation_source = 'estimate'), 0)::BIGINT AS estimated_observations,
    coalesce(sum(sign * direct_cost_usd::{dec}), 0)::{dec} AS direct,
    coalesce(sum(sign * decision_cost_usd::{dec}), 0)::{dec} AS decision,
    coalesce(sum(sign * decision_llm_calls::{dec}), 0)::{dec} AS decision_llm_calls,
    coalesce(sum(sign * decision_input_tokens::{dec}), 0)::{dec} AS decision_input_tokens,
    coalesce(sum(sign * decision_output_tokens::{dec}), 0)::{dec} AS decision_output_tokens,
    max(ex_key) FILTER (WHERE sign > 0) AS example_key,
    arg_max(trace_id, ex_key) FILTER (WHERE sign > 0) AS example_trace
FROM c GROUP BY {keys}
UNION ALL BY NAME
SELECT bucket AS start_time, project, {cols}, tool_name, 'error' AS part,
    coalesce(error_type, 'error') AS part_key, sum(sign)::BIGINT AS entries, sum(sign)::BIGINT AS value
FROM c WHERE is_error GROUP BY {keys}, part_key
UNION ALL BY NAME
SELECT bucket AS start_time, project, {cols}, tool_name, 'carry' AS part,
    model AS part_key, sum(sign)::BIGINT AS entries, sum(sign * resent_tokens)::BIGINT AS value
FROM k GROUP BY {keys}, model
"""


# Finding a run by trace id without scanning `runs`: `trace_key` (the trace id's first 15 hex digits as
# a BIGINT) is compared before the 32-char string, and `start_time` (the trace's first span start when
# its run row was created) bounds the runs read: a run's span_start only decreases and its span_end
# only increases afterwards, so span_start <= start_time <= span_end keeps holding, and the runs
# table's per-segment zone maps skip everything else. Insert-only (one row per project and trace).
TRACE_INDEX_DDL = """
CREATE TABLE IF NOT EXISTS trace_index (
    trace_key  BIGINT    NOT NULL,
    project    VARCHAR   NOT NULL,
    trace_id   VARCHAR   NOT NULL,
    start_time TIMESTAMP NOT NULL
)
"""


def trace_key_sql(expr: str) -> str:
    """SQL for the trace_key of the trace id `expr` (a column name or `?`)."""
    return f"TRY_CAST('0x' || substr({expr}, 1, 15) AS BIGINT)"


TOOL_ROLLUP_BACKFILL = f"""
INSERT INTO tool_rollup BY NAME
SELECT * FROM ({tool_rollup_rows("SELECT *, 1 AS sign FROM tool_calls", "SELECT *, 1 AS sign FROM tool_carry",
                                 V8_ROLLUP_FACTS)})
ORDER BY start_time
"""

TRACE_INDEX_BACKFILL = f"""
INSERT INTO trace_index
SELECT coalesce({trace_key_sql("trace_id")}, 0), project, trace_id, coalesce(span_start, start_time, updated_at)
FROM runs ORDER BY 1
"""


# Traces whose analytics rows (tool_calls, tool_carry, tool_rollup, run_models, plan_spans) are behind
# their spans: the load transaction adds one row per trace it touched, the writer's upkeep pass
# (ingest/store/upkeep.py) recomputes those traces and deletes their rows, in one transaction. Kept
# in DuckDB, not in memory, so a crash between the two loses no upkeep.
UPKEEP_PENDING_DDL = """
CREATE TABLE IF NOT EXISTS upkeep_pending (
    project    VARCHAR   NOT NULL,
    trace_id   VARCHAR   NOT NULL,
    queued_at  TIMESTAMP NOT NULL   -- the load's time, which is also the runs row's updated_at
)
"""

# Runs of foreign clients (ingest/store/run_derive.py, design.md §3 "Runs of foreign clients"): how the
# stop reason was found ('reported' by the run span, 'inferred' from the trace), the failure's evidence
# (exception type and message as sent), the run's agent spans with their own counts (JSON list), and
# whether the trace is a run at all (false: it only records building an agent; NULL: not derived yet).
# Stored runs that have a stop reason were reported by their run span (only the kernel's carry one).
RUNS_DERIVED = [
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS stop_reason_source VARCHAR",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS failure_evidence VARCHAR",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS agents JSON",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS is_run BOOLEAN",
    "UPDATE runs SET stop_reason_source = 'reported' WHERE stop_reason IS NOT NULL AND stop_reason_source IS NULL",
]

# Span facts of more client conventions (ingest/normalize/span.py, design.md §3): the agent's id,
# reasoning and cache-write tokens of model calls (priced at their own rates), time to the first
# streamed chunk and whether the call streamed. `cost_source` gains the value 'client' (a cost the
# foreign client reported) beside 'span' (steplens.cost.usd) and 'price_table'.
CONVENTION_SPAN_COLUMNS = [
    "ALTER TABLE spans ADD COLUMN IF NOT EXISTS agent_id VARCHAR",  # gen_ai.agent.id
    "ALTER TABLE spans ADD COLUMN IF NOT EXISTS reasoning_tokens BIGINT",  # subset of output_tokens
    "ALTER TABLE spans ADD COLUMN IF NOT EXISTS cache_creation_tokens BIGINT",  # subset of input_tokens
    "ALTER TABLE spans ADD COLUMN IF NOT EXISTS time_to_first_chunk_ms DOUBLE",  # LLM calls only
    "ALTER TABLE spans ADD COLUMN IF NOT EXISTS stream BOOLEAN",  # gen_ai.request.stream
]

# OTLP log records (POST /v1/logs, LogsService/Export), loaded by ingest/store/logs_load.py. Keyed to
# their span by (project, trace_id, span_id), joined at read time so arrival order never matters.
# GenAI events (messages, inference details) and `gen_ai.evaluation.result` scores live here; the
# evaluation's name/score/explanation are promoted. `record_key` (a digest of resource, scope and
# record) is the dedup key of a retried export, by anti-join like spans.
LOG_RECORDS_DDL = """
CREATE TABLE IF NOT EXISTS log_records (
    project          VARCHAR   NOT NULL,
    trace_id         VARCHAR,              -- 32 lowercase hex chars; NULL without trace context
    trace_key        BIGINT,               -- trace_key_sql(trace_id): the cheap first filter of a lookup
    span_id          VARCHAR,              -- 16 lowercase hex chars; NULL without span context
    time             TIMESTAMP NOT NULL,   -- the record's time, else observed time, else ingest time
    observed_time    TIMESTAMP,
    event_name       VARCHAR,              -- LogRecord.event_name, else the event.name attribute
    severity_number  INTEGER,
    severity_text    VARCHAR,
    body             JSON,                 -- the AnyValue body as JSON
    attributes       JSON,
    resource         JSON,
    service          VARCHAR,
    scope            VARCHAR,
    eval_name        VARCHAR,              -- gen_ai.evaluation.result: gen_ai.evaluation.name
    eval_score_value DOUBLE,               -- gen_ai.evaluation.score.value
    eval_score_label VARCHAR,              -- gen_ai.evaluation.score.label
    eval_explanation VARCHAR,              -- gen_ai.evaluation.explanation
    record_key       VARCHAR   NOT NULL,
    ingested_at      TIMESTAMP NOT NULL
)
"""

# The run's mode (live, shadow, eval, replay; NULL = a client that sent none, read as live) joins the
# run facts copied onto the analytics rows, so /api/tools and /api/cost keep eval and shadow runs out of
# live figures without a join (design.md §4 `mode`). Stored rows take their run's mode; the rollup gains
# it as a key, so it is rebuilt from tool_calls/tool_carry (one pass, like version 8's backfill).
_MODE_TABLES = ("tool_calls", "tool_carry", "run_models")
ANALYTICS_RUN_MODE = [
    *(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS mode VARCHAR" for table in (*_MODE_TABLES, "tool_rollup")),
    *(
        f"UPDATE {table} SET mode = r.mode FROM runs r "
        f"WHERE r.project = {table}.project AND r.trace_id = {table}.trace_id AND r.mode IS NOT NULL"
        for table in _MODE_TABLES
    ),
    "DELETE FROM tool_rollup",
    f"""
INSERT INTO tool_rollup BY NAME
SELECT * FROM ({tool_rollup_rows("SELECT *, 1 AS sign FROM tool_calls", "SELECT *, 1 AS sign FROM tool_carry",
                                 ("agent", "version", "environment", "mode"))})
ORDER BY start_time
""",
]
# The whole rollup rebuilt from tool_calls/tool_carry with the current keys (bench/_query_data.py).
TOOL_ROLLUP_REBUILD = ANALYTICS_RUN_MODE[-2:]

# Traces whose analytics upkeep fails on their own (ingest/store/upkeep.py isolates them): skipped by
# every pass, retried alone with backoff from `next_at`, so one bad trace never blocks the others'
# analytics. Kept in DuckDB so the backoff and the count survive a restart.
UPKEEP_QUARANTINE_DDL = """
CREATE TABLE IF NOT EXISTS upkeep_quarantine (
    project      VARCHAR   NOT NULL,
    trace_id     VARCHAR   NOT NULL,
    attempts     INTEGER   NOT NULL,   -- failed upkeep attempts so far
    reason       VARCHAR   NOT NULL,   -- the last error, "<class>: <message>"
    first_failed TIMESTAMP NOT NULL,
    next_at      TIMESTAMP NOT NULL    -- not retried before this
)
"""

# Full-text search (ingest/search): spans stored but not yet in the search index, queued inside the load
# transaction by their key (the content columns are NULL: the indexer reads them from `spans`; rows
# queued by an older version carry them), deleted by the writer once the index (a SQLite FTS5 sidecar
# file) has committed them. Its size is the index's lag; the index itself is derived and rebuildable.
SEARCH_PENDING_DDL = """
CREATE TABLE IF NOT EXISTS search_pending (
    project          VARCHAR   NOT NULL,
    trace_id         VARCHAR   NOT NULL,
    span_id          VARCHAR   NOT NULL,
    start_time       TIMESTAMP NOT NULL,
    status_message   VARCHAR,
    attributes       JSON,
    events           JSON,
    queued_at        TIMESTAMP NOT NULL   -- the load's time: one value per load transaction
)
"""

# Scores (ingest/scores/): judgments of a run (trace_id), a span (trace_id + span_id) or a session.
# One row per (project, score_id): the loader (ingest/store/scores_load.py) replaces a row only with a
# newer created_at, so a retry stores one and a person's changed label wins. No ART index (see the
# module doc); lookups by trace compare `trace_key` (as trace_index does) and rows are appended in
# load order, close to created_at order, so zone maps skip old row groups for time filters. The
# run's agent/version/mode are joined from `runs` when read (ingest/queries/scores.py says why).
SCORES_DDL = """
CREATE TABLE IF NOT EXISTS scores (
    project       VARCHAR   NOT NULL,
    score_id      VARCHAR   NOT NULL,
    name          VARCHAR   NOT NULL,
    data_type     VARCHAR   NOT NULL,   -- numeric | boolean | categorical
    value_numeric DOUBLE,               -- numeric value; boolean as 1/0
    value_label   VARCHAR,              -- categorical label; boolean as 'true'/'false'
    comment       VARCHAR,
    source        VARCHAR   NOT NULL,   -- human | api | judge | rule | eval | client
    author        VARCHAR,
    created_at    TIMESTAMP NOT NULL,   -- when it was scored (UTC)
    trace_id      VARCHAR,              -- the run's trace (NULL for a session score)
    trace_key     BIGINT,               -- ingest.schema.trace_key_sql(trace_id)
    span_id       VARCHAR,              -- a span of that trace
    session_id    VARCHAR,              -- a conversation/session
    metadata      JSON,
    ingested_at   TIMESTAMP NOT NULL
)
"""

# Score configs declared through the API (`POST /api/score-configs`), per project; the steplens.toml
# `[[scores]]` ones live in the settings and are never copied here.
SCORE_CONFIGS_DDL = """
CREATE TABLE IF NOT EXISTS score_configs (
    project     VARCHAR   NOT NULL,
    name        VARCHAR   NOT NULL,
    data_type   VARCHAR   NOT NULL,
    min_value   DOUBLE,
    max_value   DOUBLE,
    categories  VARCHAR[],
    description VARCHAR,
    updated_at  TIMESTAMP NOT NULL,
    updated_by  VARCHAR
)
"""
# Annotation queues (ingest/queues/): a queue's definition and watermark, its items (one per run that
# entered), the person holding an item (a lease), and each person's decision on an item (labelled with
# the values written as scores, or skipped). No keys, like every table here: the writer thread inserts
# only after an anti-join (ingest/queues/fill.py, items.py).
QUEUES_MIGRATION = [
    """
    CREATE TABLE IF NOT EXISTS annotation_queues (
        project          VARCHAR   NOT NULL,
        name             VARCHAR   NOT NULL,
        description      VARCHAR,
        filter           JSON      NOT NULL,   -- ingest.queues.model.QueueFilter
        sampling_rate    DOUBLE    NOT NULL,
        score_configs    VARCHAR[] NOT NULL,
        assignees        VARCHAR[] NOT NULL,
        labels_per_item  INTEGER   NOT NULL,
        lease_s          INTEGER   NOT NULL,
        declared         BOOLEAN   NOT NULL,   -- from steplens.toml: the file owns it
        watermark        TIMESTAMP NOT NULL,   -- runs updated after this are still to be looked at
        created_at       TIMESTAMP NOT NULL,
        created_by       VARCHAR,
        updated_at       TIMESTAMP NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS queue_items (
        project    VARCHAR   NOT NULL,
        queue      VARCHAR   NOT NULL,
        trace_id   VARCHAR   NOT NULL,
        run_start  TIMESTAMP,
        added_at   TIMESTAMP NOT NULL,
        source     VARCHAR   NOT NULL,          -- live | backfill
        status     VARCHAR   NOT NULL,          -- pending | done | skipped (in progress: a live claim)
        decided_at TIMESTAMP
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS queue_claims (
        project     VARCHAR   NOT NULL,
        queue       VARCHAR   NOT NULL,
        trace_id    VARCHAR   NOT NULL,
        user_name   VARCHAR   NOT NULL,
        claimed_at  TIMESTAMP NOT NULL,
        lease_until TIMESTAMP NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS queue_labels (
        project    VARCHAR   NOT NULL,
        queue      VARCHAR   NOT NULL,
        trace_id   VARCHAR   NOT NULL,
        user_name  VARCHAR   NOT NULL,
        decision   VARCHAR   NOT NULL,          -- labelled | skipped
        "values"   JSON,                        -- {config name: value} as submitted (and scored)
        score_ids  JSON,                        -- {config name: score id}
        comment    VARCHAR,
        decided_at TIMESTAMP NOT NULL
    )
    """,
]

def _attr_text(name: str) -> str:
    """SQL for the text of the attribute `name` of a log_records row (names hold dots: quoted)."""
    return f"""json_extract_string(attributes, '$."{name}"')"""


# `gen_ai.evaluation.result` log records as scores (source `client`, author the record's `enduser.id`,
# else its service): numeric when the record has a finite `gen_ai.evaluation.score.value` (its label
# kept beside it), boolean when `steplens.score.data_type` says so (value 1/0, label true/false),
# else categorical by its label; a record with neither, no name or no trace is not a score. The id is
# the record's `steplens.score.id` (tracer.feedback sends one, so a changed feedback replaces the
# earlier), else derived from its content key, so a retried export (stored once as a log) is one
# score. Used by the loader for every new log record (ingest/store/scores_load.py) and, once, for the
# records stored before scores existed (the migration below). `{source}`: a table of log_records rows.
_EVAL_BOOLEAN = f"({_attr_text(c.SCORE_DATA_TYPE)} = 'boolean' AND isfinite(eval_score_value))"
EVALUATION_SCORES_SELECT = f"""
SELECT project, coalesce(left(nullif({_attr_text(c.SCORE_ID)}, ''), 128), 'otel-' || record_key) AS score_id,
    left(eval_name, 200) AS name,
    CASE WHEN {_EVAL_BOOLEAN} THEN 'boolean' WHEN isfinite(eval_score_value) THEN 'numeric' ELSE 'categorical' END
        AS data_type,
    CASE WHEN {_EVAL_BOOLEAN} THEN (eval_score_value >= 0.5)::INTEGER::DOUBLE
         WHEN isfinite(eval_score_value) THEN eval_score_value END AS value_numeric,
    CASE WHEN {_EVAL_BOOLEAN} THEN CASE WHEN eval_score_value >= 0.5 THEN 'true' ELSE 'false' END
         ELSE nullif(left(eval_score_label, 200), '') END AS value_label,
    left(eval_explanation, 10000) AS comment, 'client' AS source,
    coalesce(left({_attr_text(c.ENDUSER_ID)}, 200), service) AS author, time AS created_at,
    trace_id, span_id, NULL::VARCHAR AS session_id, json_object('log_record_key', record_key) AS metadata,
    ingested_at
FROM {{source}}
WHERE event_name = '{c.GEN_AI_EVENT_EVALUATION_RESULT}' AND coalesce(eval_name, '') <> '' AND trace_id IS NOT NULL
    AND (isfinite(eval_score_value) OR coalesce(eval_score_label, '') <> '')
"""
# `gen_ai.evaluation.result` events a client put on a span (the span-event form of the same
# convention) as rows shaped like log_records, so EVALUATION_SCORES_SELECT reads them the same way;
# the "record key" is the span and the event's position, stable for a span that is stored once.
# `{source}`: a table of spans rows (the loader's new spans).
def span_evaluation_events(source: str) -> str:
    """The `gen_ai.evaluation.result` span events of the spans in `source` as log_records-like rows."""
    event = c.GEN_AI_EVENT_EVALUATION_RESULT

    def attr(name: str) -> str:
        return f"""json_extract_string(attrs, '$."{name}"')"""

    return f"""(
WITH ev AS (
    SELECT project, trace_id, span_id, service, ingested_at, start_time,
        unnest(evs) AS ev, generate_subscripts(evs, 1) AS i
    FROM (SELECT project, trace_id, span_id, service, ingested_at, start_time,
              from_json(events::VARCHAR, '["JSON"]') AS evs
          FROM {source} WHERE events::VARCHAR LIKE '%{event}%')
), e AS (
    SELECT *, json_extract(ev, '$.attributes') AS attrs FROM ev WHERE json_extract_string(ev, '$.name') = '{event}'
)
SELECT project, trace_id, span_id, service, ingested_at, '{event}' AS event_name,
    coalesce(TRY_CAST(json_extract_string(ev, '$.time') AS TIMESTAMP), start_time) AS time, attrs AS attributes,
    {attr(c.GEN_AI_EVALUATION_NAME)} AS eval_name,
    TRY_CAST({attr(c.GEN_AI_EVALUATION_SCORE_VALUE)} AS DOUBLE) AS eval_score_value,
    {attr(c.GEN_AI_EVALUATION_SCORE_LABEL)} AS eval_score_label,
    {attr(c.GEN_AI_EVALUATION_EXPLANATION)} AS eval_explanation,
    'span-' || span_id || '-' || i AS record_key
FROM e
) AS span_evaluations"""


# the evaluation results stored as log records before scores existed become scores once
EVALUATION_SCORES_BACKFILL = f"""
INSERT INTO scores BY NAME
SELECT e.*, {trace_key_sql("e.trace_id")} AS trace_key FROM ({EVALUATION_SCORES_SELECT.format(source="log_records")}) e
ANTI JOIN scores s ON s.project = e.project AND s.score_id = e.score_id
"""

# the evaluation span events of spans stored before scores existed become scores once (one scan of
# the events column, filtered by text before any JSON is parsed)
SPAN_EVALUATION_SCORES_BACKFILL = f"""
INSERT INTO scores BY NAME
SELECT e.*, {trace_key_sql("e.trace_id")} AS trace_key
FROM ({EVALUATION_SCORES_SELECT.format(source=span_evaluation_events("spans"))}) e
ANTI JOIN scores s ON s.project = e.project AND s.score_id = e.score_id
"""

# Saved views (GET/POST/PUT/DELETE /api/views, ingest/queries/views.py): a named filter + time range + page
# of the dashboards, stored per project so a team shares it by URL. `filter` is the page's filter
# expression (free text to this table), `since`/`until` are kept as given (a relative `24h` stays
# relative), `params` the page's other query parameters. Written only on the store's writer thread.
SAVED_VIEWS_DDL = """
CREATE TABLE IF NOT EXISTS saved_views (
    view_id      VARCHAR   NOT NULL,   -- uuid4 hex
    project      VARCHAR   NOT NULL,
    name         VARCHAR   NOT NULL,   -- unique per project
    page         VARCHAR   NOT NULL,   -- the dashboards page it opens (runs, sessions, graph, ...)
    filter       VARCHAR   NOT NULL,   -- the filter expression; '' for none
    since        VARCHAR,              -- ISO 8601 or relative (24h, 7d); NULL: the page's default
    until        VARCHAR,
    params       JSON      NOT NULL,   -- the page's other query parameters, {name: value}
    created_by   VARCHAR,              -- the key's name (never the key)
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL
)
"""

# Datasets of eval cases made from stored runs (ingest/datasets/): one row per dataset, one per case in
# dataset order, the case as the JSON object `steplens eval run` reads (one line of the JSONL).
DATASETS_DDL = """
CREATE TABLE IF NOT EXISTS datasets (
    project     VARCHAR   NOT NULL,
    name        VARCHAR   NOT NULL,
    description VARCHAR,
    selection   JSON      NOT NULL,   -- the request that chose the runs (filter, trace ids, options)
    cases       INTEGER   NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    created_by  VARCHAR
)
"""
DATASET_CASES_DDL = """
CREATE TABLE IF NOT EXISTS dataset_cases (
    project   VARCHAR NOT NULL,
    dataset   VARCHAR NOT NULL,
    position  INTEGER NOT NULL,
    case_id   VARCHAR NOT NULL,
    trace_id  VARCHAR NOT NULL,        -- the run the case was made from
    body      JSON    NOT NULL         -- {id, category, task, expect, source}
)
"""

# Online evaluators (ingest/evaluators/): the outcome of each (rule, run) evaluation, so a restart
# neither redoes nor loses one and GET /api/evaluators counts results without reading scores. One
# row per (project, rule, trace_id), replaced (delete + insert on the writer) when re-evaluated.
# `cost_usd` is the judge's own cost (evaluation cost, never the agent's); `judge_trace_ids` are the
# judge's runs (mode eval), the last one the run that gave the score.
EVALUATIONS_DDL = """
CREATE TABLE IF NOT EXISTS evaluations (
    project          VARCHAR   NOT NULL,
    rule             VARCHAR   NOT NULL,
    trace_id         VARCHAR   NOT NULL,
    status           VARCHAR   NOT NULL,   -- done | error
    score_name       VARCHAR   NOT NULL,
    score_id         VARCHAR,              -- the score written (done only)
    value_numeric    DOUBLE,               -- numbers; booleans as 1/0
    value_label      VARCHAR,              -- categorical labels; booleans as true/false
    passed           BOOLEAN,              -- boolean true / numeric at or above pass_at; NULL when undefined
    reason           VARCHAR,              -- the evaluator's reason, or the error
    attempts         INTEGER   NOT NULL,
    cost_usd         DOUBLE,
    judge_trace_ids  VARCHAR[],
    run_start        TIMESTAMP,
    evaluated_at     TIMESTAMP NOT NULL
)
"""

# Runs handed to a human (kernel/handoff.py, design.md §2 "Hand-off"): why and to whom, from the run
# span's steplens.run.handoff.* attributes; NULL reason = not handed off. Stored runs are read back
# from their root span's attributes once, so the hand-off rate covers what was already kept.
RUNS_HANDOFF = [
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS handoff_reason VARCHAR",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS handoff_target VARCHAR",
    f"""
    UPDATE runs SET
        handoff_reason = json_extract_string(s.attributes, '$."{c.RUN_HANDOFF_REASON}"'),
        handoff_target = json_extract_string(s.attributes, '$."{c.RUN_HANDOFF_TARGET}"')
    FROM spans s
    WHERE s.project = runs.project AND s.trace_id = runs.trace_id AND s.span_id = runs.root_span_id
        AND json_extract_string(s.attributes, '$."{c.RUN_HANDOFF_REASON}"') IS NOT NULL
    """,
]

# Runs an async task's runner started (kernel/tasks, design.md §2 "Async tasks"): the task's id from the
# run span's steplens.task.id, so /api/runs?task_id= finds a task's run(s); NULL = not a task's run.
RUNS_TASK = [
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS task_id VARCHAR",
    f"""
    UPDATE runs SET task_id = json_extract_string(s.attributes, '$."{c.TASK_ID}"')
    FROM spans s
    WHERE s.project = runs.project AND s.trace_id = runs.trace_id AND s.span_id = runs.root_span_id
        AND json_extract_string(s.attributes, '$."{c.TASK_ID}"') IS NOT NULL
    """,
]

# Runs routed by a gray release (kernel/release.py, design.md §2 "Gray release"): the release's name,
# the cohort (stable, candidate, shadow) and, for a shadow, the trace of the live run it mirrors.
RUNS_RELEASE = [
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS release_name VARCHAR",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS release_cohort VARCHAR",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS release_primary_trace_id VARCHAR",
    f"""
    UPDATE runs SET
        release_name = json_extract_string(s.attributes, '$."{c.RELEASE_NAME}"'),
        release_cohort = json_extract_string(s.attributes, '$."{c.RELEASE_COHORT}"'),
        release_primary_trace_id = json_extract_string(s.attributes, '$."{c.RELEASE_PRIMARY_TRACE_ID}"')
    FROM spans s
    WHERE s.project = runs.project AND s.trace_id = runs.trace_id AND s.span_id = runs.root_span_id
        AND json_extract_string(s.attributes, '$."{c.RELEASE_NAME}"') IS NOT NULL
    """,
]

# Ordered migrations; index + 1 is the schema version. Append, never edit a shipped entry.
MIGRATIONS: list[list[str]] = [
    [SPANS_DDL, RUNS_DDL],
    [SPOOL_POSITION_DDL, *RUNS_ROOT_TRACKING],
    ANALYTICS_MIGRATION,  # version 3: analytics (failure signatures, tool costs, cost by model)
    [ALERT_STATE_DDL, ALERT_EVENTS_DDL],  # version 4: alerting
    [PLAN_SPANS_DDL, PLAN_SPANS_BACKFILL],  # version 5: replanning analytics
    [APPROVALS_DDL],  # version 6: human approvals (ingest/approvals.py)
    ANALYTICS_RUN_FACTS,  # version 7: run filter facts on the analytics tables
    [TOOL_ROLLUP_DDL, TOOL_ROLLUP_BACKFILL, TRACE_INDEX_DDL, TRACE_INDEX_BACKFILL],  # version 8: rollup, trace index
    [UPKEEP_PENDING_DDL],  # version 9: analytics upkeep out of the load transaction
    RUNS_DERIVED,  # runs of foreign clients: stop reason source, failure evidence, agents, is_run
    CONVENTION_SPAN_COLUMNS,  # span facts of more client conventions (reasoning, cache write, TTFC)
    [LOG_RECORDS_DDL],  # OTLP log records: GenAI events and evaluation results keyed to their spans
    [UPKEEP_QUARANTINE_DDL],  # analytics upkeep: traces whose pass fails on their own, isolated
    ANALYTICS_RUN_MODE,  # the run's mode on the analytics rows and as a rollup key
    [SEARCH_PENDING_DDL],  # full-text search: spans queued for the search index (its lag)
    [SCORES_DDL, SCORE_CONFIGS_DDL],  # scores of runs, spans and sessions, and the API's score configs
    [EVALUATION_SCORES_BACKFILL],  # stored gen_ai.evaluation.result log records become scores
    [SPAN_EVALUATION_SCORES_BACKFILL],  # and so do the evaluation span events of stored spans
    [SAVED_VIEWS_DDL],  # saved views of the dashboards, per project (/api/views)
    [DATASETS_DDL, DATASET_CASES_DDL],  # datasets of eval cases made from stored runs
    QUEUES_MIGRATION,  # annotation queues: definitions, items, claims, people's decisions
    [EVALUATIONS_DDL],  # online evaluators: the outcome of each (rule, run) evaluation
    RUNS_HANDOFF,  # runs handed to a human: hand-off reason and target from the run span
    RUNS_TASK,  # runs an async task's runner started: the task id from the run span
    PLAN_SPANS_CONTEXT_MIGRATION,  # replan spans: route, lessons, variable health, kept/dropped/added, refusal
    RUNS_RELEASE,  # gray releases: the run's release name, cohort and (shadow) primary trace
]
