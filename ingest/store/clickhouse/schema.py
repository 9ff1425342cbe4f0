"""ClickHouse schema of the span store: the DuckDB tables (ingest/schema.py) column for column.

Why the same names and types: the read queries of this backend (ingest/store/clickhouse/queries/)
are the DuckDB ones translated, and the API turns their rows into the same answers, so a column
means the same thing in both stores. Type mapping: VARCHAR -> String, TIMESTAMP ->
DateTime64(6, 'UTC') (naive UTC in Python, like DuckDB's), DOUBLE -> Float64, BIGINT -> Int64,
INTEGER -> Int32, BOOLEAN -> Bool, JSON -> String (read with JSONExtract*), VARCHAR[] ->
Array(String); a column DuckDB allows NULL in is Nullable here.

Engines (why):
- `spans`: ReplacingMergeTree ordered by (project, trace_id, span_id). A retried or replayed span
  collapses to one row on merge, and the loader's anti-join keeps it single before that; the
  same key makes fetching a trace a range read. Time-range reads use the minmax skip index on
  start_time (a time-first ordering key would not deduplicate: a span resent with a moved start
  time would be a second row). Not partitioned by time for the same reason: rows deduplicate
  within a partition only.
- `runs`: ReplacingMergeTree(revision) ordered by (project, trace_id): every upkeep pass inserts
  the trace's new runs row with a higher revision, so late spans update the run; reads take the
  latest through FINAL (the read cursor sets `final = 1` for every statement). Minmax index on start_time for the time filters.
- scores: ReplacingMergeTree(ingested_at) ordered by (project, score_id): a changed score
  replaces the earlier one (same id), as in DuckDB.
- log_records: ReplacingMergeTree ordered by (project, record_key): a retried export is one record
  (the loader's anti-join on the key keeps it single before a merge).
- tool_calls, tool_carry, run_models, plan_spans: derived per trace; each pass writes the trace's
  whole set under a new `revision` plus `is_deleted` tombstones for rows that are gone
  (ReplacingMergeTree(revision, is_deleted)); FINAL (`final = 1` on reads) hides the tombstones.
- Every table with history gets a TTL on its time column (`retention_days`, set at each start by
  migrate.py; 0 = keep forever).
- Inserts carry `insert_deduplication_token`s (ingest/store/clickhouse/load.py), honoured on
  non-replicated tables through `non_replicated_deduplication_window`.

With a cluster name, each table is a `Replicated*MergeTree` created `ON CLUSTER` under the name
`<table>_local`, and `<table>` is a `Distributed` table over it (sharded by the trace's hash, so a
trace lives on one shard and its dedup holds). That DDL is generated and parsed in tests; it is
not run against a real cluster here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# How many recent insert tokens a non-replicated table remembers (a replay after a crash re-sends at
# most the spool's unloaded tail, far fewer inserts than this).
DEDUP_WINDOW = 10_000

_TYPES = {
    "str": "String",
    "ts": "DateTime64(6, 'UTC')",
    "f64": "Float64",
    "i64": "Int64",
    "i32": "Int32",
    "bool": "Bool",
    "json": "String",
    "strs": "Array(String)",
    "u64": "UInt64",
    "u8": "UInt8",
    "dec": "Decimal(38, 12)",
}


def _columns(spec: str) -> tuple[tuple[str, str], ...]:
    """`name type[?]` pairs, comma separated; `?` = Nullable. Types are the keys of `_TYPES`."""
    out = []
    for part in spec.split(","):
        name, short = part.split()
        nullable = short.endswith("?")
        ch_type = _TYPES[short.rstrip("?")]
        if nullable and not ch_type.startswith("Array"):
            ch_type = f"Nullable({ch_type})"
        out.append((name, ch_type))
    return tuple(out)


@dataclass(frozen=True)
class Table:
    """One table: columns, engine family, keys, retention. `version`: ReplacingMergeTree's version
    column (None: plain replacing by key, or MergeTree when `replacing` is false)."""

    name: str
    columns: tuple[tuple[str, str], ...]
    order_by: tuple[str, ...]
    replacing: bool = True
    version: str | None = None
    ttl_column: str | None = None  # a column, or an expression of columns, of the row's time
    indexes: tuple[str, ...] = ()
    shard_key: str = "rand()"
    settings: dict[str, int] = field(default_factory=dict)
    # derived per trace: each pass writes the trace's whole current set under a new `revision` and
    # an `is_deleted` tombstone for a row that is gone; reads use FINAL (tombstones hidden)
    per_trace_key: tuple[str, ...] = ()

    @property
    def column_names(self) -> list[str]:
        return [name for name, _ in self.columns]


SPANS = Table(
    "spans",
    _columns(
        "project str, trace_id str, span_id str, parent_span_id str?, service str?, scope str?, name str, kind str, "
        "start_time ts, end_time ts, duration_ms f64, status str, status_message str?, operation str, "
        "agent_name str?, agent_version str?, model str?, response_model str?, provider str?, input_tokens i64?, "
        "output_tokens i64?, cache_read_tokens i64?, cost_usd f64?, cost_source str?, tool_name str?, "
        "error_type str?, step_index i32?, stop_reason str?, run_ok bool?, run_steps i32?, conversation_id str?, "
        "user_id str?, environment str?, run_mode str?, attributes json?, events json?, resource json?, "
        "ingested_at ts, tool_decision str?, observation_tokens i64?, dropped_tokens i64?, truncated bool?, "
        "error_template str?, agent_id str?, reasoning_tokens i64?, cache_creation_tokens i64?, "
        "time_to_first_chunk_ms f64?, stream bool?"
    ),
    order_by=("project", "trace_id", "span_id"),
    ttl_column="start_time",
    indexes=("INDEX start_time_mm start_time TYPE minmax GRANULARITY 1",),
    shard_key="cityHash64(trace_id)",
)

RUNS = Table(
    "runs",
    _columns(
        "project str, trace_id str, root_span_id str?, name str?, agent str?, version str?, service str?, "
        "environment str?, user_id str?, conversation_id str?, mode str?, start_time ts?, end_time ts?, "
        "duration_ms f64?, ok bool?, stop_reason str?, steps i32?, llm_calls i32?, tool_calls i32?, "
        "tool_errors i32?, error_spans i32?, input_tokens i64?, output_tokens i64?, cost_usd f64?, models strs, "
        "failure_signature str?, eval_run_id str?, eval_case_id str?, span_count i32?, updated_at ts, "
        "root_kind str?, span_start ts?, span_end ts?, last_error_rank i32?, last_error_at ts?, "
        "last_error_span_id str?, last_error_kind str?, last_error_tool str?, last_error_type str?, "
        "last_error_template str?, stop_reason_source str?, failure_evidence str?, agents json?, is_run bool?, "
        "handoff_reason str?, handoff_target str?, task_id str?, release_name str?, release_cohort str?, "
        "release_primary_trace_id str?, revision u64"
    ),
    order_by=("project", "trace_id"),
    version="revision",
    ttl_column="coalesce(start_time, span_start, updated_at)",  # the run's start, as DuckDB's retention
    indexes=("INDEX start_time_mm start_time TYPE minmax GRANULARITY 1",),
    shard_key="cityHash64(trace_id)",
)

SCORES = Table(
    "scores",
    _columns(
        "project str, score_id str, name str, data_type str, value_numeric f64?, value_label str?, comment str?, "
        "source str, author str?, created_at ts, trace_id str?, trace_key i64?, span_id str?, session_id str?, "
        "metadata json?, ingested_at ts"
    ),
    order_by=("project", "score_id"),
    version="ingested_at",
    ttl_column="created_at",
    indexes=("INDEX trace_id_bf trace_id TYPE bloom_filter GRANULARITY 4",),
)

LOG_RECORDS = Table(
    "log_records",
    _columns(
        "project str, trace_id str?, trace_key i64?, span_id str?, time ts, observed_time ts?, event_name str?, "
        "severity_number i32?, severity_text str?, body json?, attributes json?, resource json?, service str?, "
        "scope str?, eval_name str?, eval_score_value f64?, eval_score_label str?, eval_explanation str?, "
        "record_key str, ingested_at ts"
    ),
    order_by=("project", "record_key"),
    ttl_column="time",
    indexes=("INDEX trace_id_bf trace_id TYPE bloom_filter GRANULARITY 4",),
    shard_key="cityHash64(record_key)",
)

SCORE_CONFIGS = Table(
    "score_configs",
    _columns(
        "project str, name str, data_type str, min_value f64?, max_value f64?, categories strs, description str?, "
        "updated_at ts, updated_by str?"
    ),
    order_by=("project", "name"),
    version="updated_at",
)

SAVED_VIEWS = Table(
    "saved_views",
    _columns(
        "view_id str, project str, name str, page str, filter str, since str?, until str?, params json, "
        "created_by str?, created_at ts, updated_at ts"
    ),
    order_by=("project", "view_id"),
    version="updated_at",
)

# The schema version of this store (bookkeeping for migrate.py; never replicated data).
SCHEMA_MIGRATIONS = Table(
    "schema_migrations",
    _columns("version i32, applied_at ts"),
    order_by=("version",),
    replacing=False,
)

_RUN_FACTS = "run_start ts?, agent str?, version str?, environment str?, mode str?"
_DERIVED = "revision u64, is_deleted u8"

# Analytics facts derived per trace (ingest/store/analytics_load.py, plan_load.py; the same rules).
TOOL_CALLS = Table(
    "tool_calls",
    _columns(
        "project str, trace_id str, span_id str, tool_name str?, start_time ts, end_time ts, duration_ms f64?, "
        "is_error bool, error_type str?, decision str?, direct_cost_usd f64?, decision_cost_usd f64?, "
        "decision_llm_calls f64?, decision_input_tokens f64?, decision_output_tokens f64?, observation_tokens i64?, "
        f"observation_source str?, truncated bool?, dropped_tokens i64?, {_RUN_FACTS}, {_DERIVED}"
    ),
    order_by=("project", "trace_id", "span_id"),
    version="revision",
    ttl_column="start_time",
    indexes=("INDEX start_time_mm start_time TYPE minmax GRANULARITY 1",),
    shard_key="cityHash64(trace_id)",
    per_trace_key=("project", "trace_id", "span_id"),
)

TOOL_CARRY = Table(
    "tool_carry",
    _columns(
        "project str, trace_id str, span_id str, tool_name str?, start_time ts, model str, later_calls i64, "
        f"resent_tokens i64, {_RUN_FACTS}, {_DERIVED}"
    ),
    order_by=("project", "trace_id", "span_id", "model"),
    version="revision",
    ttl_column="start_time",
    indexes=("INDEX start_time_mm start_time TYPE minmax GRANULARITY 1",),
    shard_key="cityHash64(trace_id)",
    per_trace_key=("project", "trace_id", "span_id", "model"),
)

RUN_MODELS = Table(
    "run_models",
    _columns(
        "project str, trace_id str, model str?, provider str?, start_time ts, llm_calls i64, input_tokens i64, "
        f"output_tokens i64, cost_usd f64?, {_RUN_FACTS}, {_DERIVED}"
    ),
    order_by=("project", "trace_id", "ifNull(model, '')", "ifNull(provider, '')"),
    version="revision",
    ttl_column="start_time",
    indexes=("INDEX start_time_mm start_time TYPE minmax GRANULARITY 1",),
    shard_key="cityHash64(trace_id)",
    per_trace_key=("project", "trace_id", "model", "provider"),
)

PLAN_SPANS = Table(
    "plan_spans",
    _columns(
        "project str, trace_id str, span_id str, operation str, start_time ts, end_time ts, status str, "
        "error_type str?, plan_version i32?, plan_steps i32?, granularity str?, cause str?, failed_step str?, "
        "verdict str?, from_version i32?, to_version i32?, reexecution_cost_usd f64?, llm_calls i64, "
        "input_tokens i64, output_tokens i64, llm_cost_usd f64?, route_rule str?, route_escalated bool?, "
        "escalation_reset bool?, lessons strs, variables_clean i32?, variables_stale i32?, variables_void i32?, "
        f"kept strs, dropped strs, added strs, tool_calls i32?, budget_used_tokens i64?, refusal str?, {_DERIVED}"
    ),
    order_by=("project", "trace_id", "span_id"),
    version="revision",
    ttl_column="start_time",
    indexes=("INDEX start_time_mm start_time TYPE minmax GRANULARITY 1",),
    shard_key="cityHash64(trace_id)",
    per_trace_key=("project", "trace_id", "span_id"),
)

ANALYTICS_TABLES: tuple[Table, ...] = (TOOL_CALLS, TOOL_CARRY, RUN_MODELS, PLAN_SPANS)
TABLES: tuple[Table, ...] = (SPANS, RUNS, SCORES, LOG_RECORDS, SCORE_CONFIGS, SAVED_VIEWS, *ANALYTICS_TABLES)


def _quote(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


def _engine(table: Table, cluster: str | None) -> str:
    family = "ReplacingMergeTree" if table.replacing else "MergeTree"
    args: list[str] = []
    if cluster:
        family = "Replicated" + family
        args = [f"'/clickhouse/tables/{{shard}}/{{database}}/{table.name}_local'", "'{replica}'"]
    if table.version:
        args.append(table.version)
    if table.per_trace_key:
        args.append("is_deleted")
    return f"{family}({', '.join(args)})"


def create_table(table: Table, database: str, cluster: str | None = None) -> list[str]:
    """CREATE statements for `table` in `database` (with `cluster`: local replicated + Distributed)."""
    db = _quote(database)
    on_cluster = f" ON CLUSTER {_quote(cluster)}" if cluster else ""
    local = f"{table.name}_local" if cluster else table.name
    body = [f"    {_quote(name)} {ch_type}" for name, ch_type in table.columns]
    body += [f"    {index}" for index in table.indexes]
    settings = dict(table.settings)
    if not cluster:
        settings.setdefault("non_replicated_deduplication_window", DEDUP_WINDOW)
    clauses = [f"ENGINE = {_engine(table, cluster)}", f"ORDER BY ({', '.join(table.order_by)})"]
    if settings:
        clauses.append("SETTINGS " + ", ".join(f"{k} = {v}" for k, v in settings.items()))
    statements = [
        f"CREATE TABLE IF NOT EXISTS {db}.{_quote(local)}{on_cluster} (\n" + ",\n".join(body) + "\n)\n"
        + "\n".join(clauses)
    ]
    if cluster:
        statements.append(
            f"CREATE TABLE IF NOT EXISTS {db}.{_quote(table.name)}{on_cluster} AS {db}.{_quote(local)}\n"
            f"ENGINE = Distributed({_quote(cluster)}, {db}, {_quote(local)}, {table.shard_key})"
        )
    return statements


def set_ttl(table: Table, database: str, cluster: str | None, retention_days: int) -> str | None:
    """ALTER setting `table`'s TTL to `retention_days` (0: no TTL); applied at every start, so a
    changed setting takes effect without a migration. None for a table without a time column."""
    if table.ttl_column is None:
        return None
    on_cluster = f" ON CLUSTER {_quote(cluster)}" if cluster else ""
    local = f"{table.name}_local" if cluster else table.name
    target = f"ALTER TABLE {_quote(database)}.{_quote(local)}{on_cluster}"
    if retention_days <= 0:
        return f"{target} REMOVE TTL"
    return f"{target} MODIFY TTL toDateTime({table.ttl_column}) + INTERVAL {int(retention_days)} DAY DELETE"


def create_database(database: str, cluster: str | None = None) -> str:
    on_cluster = f" ON CLUSTER {_quote(cluster)}" if cluster else ""
    return f"CREATE DATABASE IF NOT EXISTS {_quote(database)}{on_cluster}"


def migrations(database: str, cluster: str | None = None) -> list[list[str]]:
    """Ordered migrations of this backend; index + 1 is the version. Append, never edit a shipped one."""
    first: list[str] = []
    for table in (SPANS, RUNS, SCORES, LOG_RECORDS, SCORE_CONFIGS, SAVED_VIEWS):
        first += create_table(table, database, cluster)
    analytics: list[str] = []
    for table in ANALYTICS_TABLES:
        analytics += create_table(table, database, cluster)
    return [first, analytics, search_migration(database, cluster)]


# Tables of other parts, in modules of their own (imported last: they build on the helpers above;
# the package's __init__ imports this module first, so either import order works).
from ingest.store.clickhouse.schema_search import SEARCH_TABLES, search_migration  # noqa: E402

TABLES = (*TABLES, *SEARCH_TABLES)
