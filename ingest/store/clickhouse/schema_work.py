"""ClickHouse tables of the services that keep their own rows: annotation queues, online evaluators'
outcomes, datasets and approvals (score configs are `score_configs` in schema.py).

The DuckDB tables (ingest/schema.py) column for column, plus `revision` (UInt64) and `is_deleted`
(UInt8): every table is ReplacingMergeTree(revision, is_deleted) on the key a row is found by, so an
update is a new row version with a higher revision, a delete a tombstone, and a read (FINAL, the
cursor's `final = 1`) sees one current row per key or none. Why this holds the services' guarantees:
- a run enters a queue once: `queue_items` is keyed (project, queue, trace_id), so even an insert
  repeated after a crash collapses to one item (and the filler anti-joins before inserting);
- a lease is held by one person: `queue_claims` is keyed by (project, queue, trace_id, user_name)
  and the claims of a queue are written by one thread of one node (the api node's work thread),
  which reads "is there room?" and inserts with no other claim in between;
- an evaluation runs at most once per (rule, run): `evaluations` is keyed (project, rule, trace_id);
  the worker writes the outcome after the score (whose id is a digest of rule + run), so a restart
  re-evaluates only a run whose outcome was never written, and replaces the same score;
- a dataset is stored once and read whole: `dataset_cases` are keyed by the saving's `created_at`
  too and inserted before the `datasets` row naming it, so a reader sees the old cases or the new
  ones, never half (and `steplens migrate` copies both as they are);
- the live filler's progress (`queue_watermarks`) is a table of its own, written only by the worker,
  so a definition changed on the api node and a watermark moved by the worker never overwrite each
  other's row; the watermark of a queue re-created under the same name starts afresh (keyed by the
  queue's created_at).
With a cluster, each table is sharded by the key its rows are found by (a queue's rows by (project,
queue), an approval by its id), so every version of a row lands on one shard, where FINAL collapses
them; the work inserts are synchronous on the Distributed table (`insert_distributed_sync`), so a
write reads back what it wrote. Queue items and decisions, and evaluations, age out with
`retention_days` like their DuckDB rows (ingest/store/retention.py): TTL on run_start, decided_at
and evaluated_at, and the worker's sweep.
"""

from __future__ import annotations

from ingest.store.clickhouse.schema import Table, _columns

_VERSIONED = "revision u64, is_deleted u8"

ANNOTATION_QUEUES = Table(
    "annotation_queues",
    _columns(
        "project str, name str, description str?, filter json, sampling_rate f64, score_configs strs, assignees strs, "
        f"labels_per_item i32, lease_s i32, declared bool, watermark ts, created_at ts, created_by str?, updated_at ts, "
        f"{_VERSIONED}"
    ),
    order_by=("project", "name"),
    version="revision",
    shard_key="cityHash64(project, name)",
)

QUEUE_WATERMARKS = Table(
    "queue_watermarks",
    _columns("project str, queue str, created_at ts, watermark ts"),
    order_by=("project", "queue", "created_at"),
    version="watermark",  # only ever moves forward: the latest is the largest
    shard_key="cityHash64(project, queue)",
)

QUEUE_ITEMS = Table(
    "queue_items",
    _columns(
        "project str, queue str, trace_id str, run_start ts?, added_at ts, source str, status str, decided_at ts?, "
        f"{_VERSIONED}"
    ),
    order_by=("project", "queue", "trace_id"),
    version="revision",
    shard_key="cityHash64(project, queue)",
    ttl_column="coalesce(run_start, added_at)",
)

QUEUE_CLAIMS = Table(
    "queue_claims",
    _columns(f"project str, queue str, trace_id str, user_name str, claimed_at ts, lease_until ts, {_VERSIONED}"),
    order_by=("project", "queue", "trace_id", "user_name"),
    version="revision",
    shard_key="cityHash64(project, queue)",
)

QUEUE_LABELS = Table(
    "queue_labels",
    _columns(
        "project str, queue str, trace_id str, user_name str, decision str, values json?, score_ids json?, "
        f"comment str?, decided_at ts, {_VERSIONED}"
    ),
    order_by=("project", "queue", "trace_id", "user_name"),
    version="revision",
    shard_key="cityHash64(project, queue)",
    ttl_column="decided_at",
)

EVALUATIONS = Table(
    "evaluations",
    _columns(
        "project str, rule str, trace_id str, status str, score_name str, score_id str?, value_numeric f64?, "
        "value_label str?, passed bool?, reason str?, attempts i32, cost_usd f64?, judge_trace_ids strs, "
        f"run_start ts?, evaluated_at ts, {_VERSIONED}"
    ),
    order_by=("project", "rule", "trace_id"),
    version="revision",
    shard_key="cityHash64(project, trace_id)",
    ttl_column="evaluated_at",
)

DATASETS = Table(
    "datasets",
    _columns(
        f"project str, name str, description str?, selection json, cases i32, created_at ts, created_by str?, "
        f"{_VERSIONED}"
    ),
    order_by=("project", "name"),
    version="revision",
    shard_key="cityHash64(project, name)",
)

DATASET_CASES = Table(
    "dataset_cases",
    _columns(f"project str, dataset str, dataset_created_at ts, position i32, case_id str, trace_id str, body json, "
             f"{_VERSIONED}"),
    order_by=("project", "dataset", "dataset_created_at", "position"),
    version="revision",
    shard_key="cityHash64(project, dataset)",
)

APPROVALS = Table(
    "approvals",
    _columns(
        "approval_id str, project str, status str, tool_name str, arguments json?, risk str?, agent str?, "
        "agent_version str?, trace_id str?, call_id str?, summary str?, wait_s f64?, requested_by str?, "
        f"created_at ts, decided_at ts?, decided_by str?, reason str?, {_VERSIONED}"
    ),
    order_by=("approval_id",),
    version="revision",
    shard_key="cityHash64(approval_id)",
)

# What only the ClickHouse layout has beyond DuckDB's tables (every other column is DuckDB's, in order,
# then `revision` and `is_deleted`): the filler's own watermark table, and the saving a case belongs to.
CLICKHOUSE_ONLY_TABLES = ("queue_watermarks",)
CLICKHOUSE_ONLY_COLUMNS = {"dataset_cases": ("dataset_created_at",)}

WORK_TABLES: tuple[Table, ...] = (ANNOTATION_QUEUES, QUEUE_WATERMARKS, QUEUE_ITEMS, QUEUE_CLAIMS, QUEUE_LABELS,
                                  EVALUATIONS, DATASETS, DATASET_CASES, APPROVALS)


def work_migration(database: str, cluster: str | None = None) -> list[str]:
    """The CREATE statements of every table above (one migration of schema.py's list)."""
    from ingest.store.clickhouse.schema import create_table  # schema.py imports this module while loading

    statements: list[str] = []
    for table in WORK_TABLES:
        statements += create_table(table, database, cluster)
    return statements
