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
    if sql_type == "INTEGER":
        return f"TRY_CAST(TRY_CAST({text} AS DOUBLE) AS INTEGER)"
    return f"TRY_CAST({text} AS {sql_type})"


# The plan_spans row of spans row `s` with usage row `u` (LEFT JOINed; NULL when no LLM call under it).
PLAN_SPAN_COLUMNS = f"""
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
SELECT {PLAN_SPAN_COLUMNS}
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


# Ordered migrations; index + 1 is the schema version. Append, never edit a shipped entry.
MIGRATIONS: list[list[str]] = [
    [SPANS_DDL, RUNS_DDL],
    [SPOOL_POSITION_DDL, *RUNS_ROOT_TRACKING],
    ANALYTICS_MIGRATION,  # version 3: analytics (failure signatures, tool costs, cost by model)
    [ALERT_STATE_DDL, ALERT_EVENTS_DDL],  # version 4: alerting
    [PLAN_SPANS_DDL, PLAN_SPANS_BACKFILL],  # version 5: replanning analytics
    [APPROVALS_DDL],  # version 6: human approvals (ingest/approvals.py)
    ANALYTICS_RUN_FACTS,  # version 7: run filter facts on the analytics tables
]

