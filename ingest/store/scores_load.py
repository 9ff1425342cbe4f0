"""Loading scores: what the writer does with a spool record of kind SCORES.

A SCORES record's payload is a JSON batch of resolved scores (`encode`, built by
ingest/scores/submit.py before the ack). The writer turns it into Arrow rows (`normalize`) and
hands them to the SAME `loading.load_batch` transaction as the spans and log records of its batch,
so the rows and the spool mark commit together: a crash never loses or doubles a score.

Replacement by id (design.md §3 "scores"): one row per (project, score_id). A score whose id is
stored already replaces the stored row only when its `created_at` is later; an equal or older one
(a retry, a late duplicate) is ignored. Within one batch the latest `created_at` of an id wins, the
first sent of equal ones. `gen_ai.evaluation.result` log records become scores in the load that
stores them (`insert_evaluation_scores`, source `client`), and so do span events of that name
(`insert_span_evaluation_scores`). Done with DELETE + anti-joined INSERT rather than a UNIQUE index
(ingest/schema.py says why the store has none).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import duckdb
import pyarrow as pa

from ingest.schema import EVALUATION_SCORES_SELECT, span_evaluation_events, trace_key_sql
from ingest.scores.model import Score

PAYLOAD_VERSION = 1

SCORES_SCHEMA = pa.schema(
    [
        ("project", pa.string()),
        ("score_id", pa.string()),
        ("name", pa.string()),
        ("data_type", pa.string()),
        ("value_numeric", pa.float64()),
        ("value_label", pa.string()),
        ("comment", pa.string()),
        ("source", pa.string()),
        ("author", pa.string()),
        ("created_at", pa.timestamp("us")),
        ("trace_id", pa.string()),
        ("span_id", pa.string()),
        ("session_id", pa.string()),
        ("metadata", pa.string()),
        ("ingested_at", pa.timestamp("us")),
        ("seq", pa.int64()),  # order within the batch (ties of created_at: the first sent wins)
    ]
)

_NEW_SCORES = f"""
CREATE OR REPLACE TEMP TABLE new_scores AS
SELECT * EXCLUDE (seq), {trace_key_sql("trace_id")} AS trace_key FROM {{source}}
QUALIFY row_number() OVER (PARTITION BY project, score_id ORDER BY created_at DESC, seq) = 1
"""
_EVALUATION_BATCH = f"""
CREATE OR REPLACE TEMP TABLE evaluation_scores AS
SELECT *, row_number() OVER () AS seq FROM ({EVALUATION_SCORES_SELECT.format(source="{source}")})
"""
# stored rows an incoming score replaces (strictly newer), then the incoming rows no stored row beats
_REPLACED = """
DELETE FROM scores s USING new_scores n
WHERE s.project = n.project AND s.score_id = n.score_id AND s.created_at < n.created_at
"""
_INSERT = """
INSERT INTO scores BY NAME
SELECT n.* FROM new_scores n ANTI JOIN scores s ON s.project = n.project AND s.score_id = n.score_id
"""


def encode(scores: list[Score]) -> bytes:
    """The spool payload of a batch (the record's project is the scores' project)."""
    rows = [s.model_dump(mode="json", exclude={"project"}) for s in scores]
    return json.dumps({"v": PAYLOAD_VERSION, "scores": rows}, separators=(",", ":")).encode()


def _rows(payload: bytes) -> list[dict[str, Any]]:
    doc = json.loads(payload)
    if not isinstance(doc, dict) or doc.get("v") != PAYLOAD_VERSION or not isinstance(doc.get("scores"), list):
        raise ValueError(f"not a version {PAYLOAD_VERSION} scores payload")
    return doc["scores"]


def count(payload: bytes) -> int:
    """Scores in a spooled payload (0 when it does not parse: the load dead-letters it)."""
    try:
        return len(_rows(payload))
    except Exception:  # noqa: BLE001 - the load reports the real parse error
        return 0


def normalize(project: str, payload: bytes, now: datetime) -> pa.Table:
    """Rows of a spooled scores payload; raises for a payload that does not parse (dead-lettered)."""
    scores = [Score.model_validate({**row, "project": project}) for row in _rows(payload)]
    return table(scores, now)


def table(scores: list[Score], now: datetime) -> pa.Table:
    """The Arrow rows of `scores` (columns of SCORES_SCHEMA, `seq` in the given order)."""
    rows = [
        {
            "project": s.project, "score_id": s.score_id, "name": s.name, "data_type": s.data_type.value,
            "value_numeric": s.value_numeric, "value_label": s.value_label, "comment": s.comment,
            "source": s.source.value, "author": s.author, "created_at": s.created_at, "trace_id": s.trace_id,
            "span_id": s.span_id, "session_id": s.session_id,
            "metadata": None if s.metadata is None else json.dumps(s.metadata, separators=(",", ":")),
            "ingested_at": now, "seq": i,
        }
        for i, s in enumerate(scores)
    ]
    return pa.Table.from_pylist(rows, schema=SCORES_SCHEMA)


def concat(tables: list[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return None
    # `seq` restarts per record: renumber so "first sent" holds across the records of a batch
    combined = pa.concat_tables(tables)
    return combined.set_column(combined.schema.get_field_index("seq"), "seq", pa.array(range(combined.num_rows), pa.int64()))


def insert_scores(conn: duckdb.DuckDBPyConnection, batch: pa.Table) -> int:
    """Apply `batch` (replacement by id, see module doc) inside the caller's transaction; returns
    how many rows were written (new or replacing)."""
    if not batch.num_rows:
        return 0
    conn.register("score_batch", batch)
    try:
        conn.execute(_NEW_SCORES.format(source="score_batch"))
    finally:
        conn.unregister("score_batch")
    return _apply(conn)


def _apply(conn: duckdb.DuckDBPyConnection) -> int:
    try:
        conn.execute(_REPLACED)
        written = conn.execute(_INSERT).fetchall()[0][0]
    finally:
        conn.execute("DROP TABLE IF EXISTS new_scores")
    return int(written)


def insert_span_evaluation_scores(conn: duckdb.DuckDBPyConnection, new_spans: str) -> int:
    """Scores of the `gen_ai.evaluation.result` events on the spans in `new_spans` (the spans a load
    just inserted), read like the log records of that name, in the caller's transaction."""
    return insert_evaluation_scores(conn, span_evaluation_events(new_spans))


def insert_evaluation_scores(conn: duckdb.DuckDBPyConnection, new_logs: str) -> int:
    """Scores of the `gen_ai.evaluation.result` records in the table `new_logs` (the log records a
    load just inserted; ingest.schema.EVALUATION_SCORES_SELECT says how), in the caller's transaction."""
    conn.execute(_EVALUATION_BATCH.format(source=new_logs))
    try:
        if not conn.execute("SELECT count(*) FROM evaluation_scores").fetchall()[0][0]:
            return 0
        conn.execute(_NEW_SCORES.format(source="evaluation_scores"))
    finally:
        conn.execute("DROP TABLE IF EXISTS evaluation_scores")
    return _apply(conn)
