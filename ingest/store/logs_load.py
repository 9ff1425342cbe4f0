"""Loading OTLP log records: what the writer does with a spool record of kind LOGS.

The writer dispatches on the record kind (ingest/store/spool.py): trace records go through the span
normalizer and `loading.load_batch`; log records are normalized here and their rows handed to the
SAME `load_batch` call, so the log rows, the spans and the spool mark of one batch commit in one
transaction (a crash never loses or doubles a record the mark has passed).

Dedup: a retried export carries the same resource, scope and records, hence the same `record_key`
(ingest/normalize/logs.py). New rows are anti-joined against the stored rows of the batch's time
range (plus a margin), like spans, so DuckDB's zone maps skip the rest of the table. Records with
no timestamp at all get their ingest time, which a retry does not repeat; when a batch holds such
records the probe also covers every stored record whose time is its ingest time.

The `gen_ai.evaluation.result` records among the new rows become scores in the same transaction
(ingest/store/scores_load.py `insert_evaluation_scores`), so a retried export is one score too.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb
import pyarrow as pa
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from ingest.normalize.logs import LOG_RECORDS_SCHEMA, count_log_records, logs_table
from ingest.store import scores_load

DEDUP_MARGIN = timedelta(seconds=5)

_NEW_LOGS = """
CREATE OR REPLACE TEMP TABLE new_logs AS
WITH batch_once AS (
    SELECT * FROM log_batch
    QUALIFY row_number() OVER (PARTITION BY project, record_key ORDER BY time) = 1
),
probe AS (
    SELECT project, record_key FROM log_records
    WHERE (time BETWEEN $lo AND $hi OR ($untimed AND time = ingested_at))
      AND record_key IN (SELECT record_key FROM log_batch)
)
SELECT b.* FROM batch_once b ANTI JOIN probe p ON p.project = b.project AND p.record_key = b.record_key
"""


def parse(payload: bytes) -> ExportLogsServiceRequest:
    return ExportLogsServiceRequest.FromString(payload)


def count(payload: bytes) -> int:
    """Log records in a spooled payload (0 when it does not parse: the load dead-letters it)."""
    try:
        return count_log_records(parse(payload))
    except Exception:  # noqa: BLE001 - the load reports the real parse error
        return 0


def normalize(project: str, payload: bytes, now: datetime) -> pa.Table:
    """Rows of a spooled logs payload; raises for a payload that does not parse (dead-lettered)."""
    return logs_table(project, parse(payload), now)


def concat(tables: list[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables if t.num_rows]
    return pa.concat_tables(tables) if tables else None


def insert_logs(conn: duckdb.DuckDBPyConnection, table: pa.Table) -> int:
    """Insert the rows of `table` not stored yet; returns how many. Runs inside the caller's
    transaction (loading.load_batch)."""
    if not table.num_rows:
        return 0
    table = table.select(LOG_RECORDS_SCHEMA.names)
    conn.register("log_batch", table)
    try:
        lo, hi, untimed = conn.execute(
            "SELECT min(time), max(time), bool_or(observed_time IS NULL AND time = ingested_at) FROM log_batch"
        ).fetchall()[0]
        conn.execute(_NEW_LOGS, {"lo": lo - DEDUP_MARGIN, "hi": hi + DEDUP_MARGIN, "untimed": bool(untimed)})
    finally:
        conn.unregister("log_batch")
    try:
        inserted = conn.execute("SELECT count(*) FROM new_logs").fetchall()[0][0]
        if inserted:
            conn.execute("INSERT INTO log_records BY NAME SELECT * FROM new_logs")
            scores_load.insert_evaluation_scores(conn, "new_logs")  # evaluation results are scores too
    finally:
        conn.execute("DROP TABLE IF EXISTS new_logs")
    return int(inserted)
