"""One load transaction: dedup-insert a batch of normalized spans, merge their runs, move the spool mark.

Everything here runs on the writer thread's connection inside ONE transaction, so the spans, the
runs rows, the trace index, the list of traces awaiting analytics upkeep (ingest/store/upkeep.py) and
the spool position can never disagree after a crash. The derived analytics tables are not touched
here: the upkeep pass recomputes them for many loads at once.

Dedup is an anti-join, not a UNIQUE index (see ingest/schema.py for why). The key is (project,
trace_id, span_id) whatever the timestamps: a span re-sent with its start time moved (a client
clock step, a re-export an hour later) is the same span. To keep the probe cheap at 10M rows it
reads only spans whose trace_id occurs in the batch and whose start_time lies where that trace's
stored spans can be: within the batch's own start-time range, or within the extent
(`runs.span_start`..`span_end`, which every stored span of the trace lies in, since a span ends no
earlier than it starts) of the batch's traces that already have a run. Those ranges are merged into
a few windows, one bounded scan each, and DuckDB's zone maps skip every row group outside them, so
a fresh trace costs what the batch's own window costs and an old one what its own extent costs,
never a full-table probe. (Retention deletes a run by its start; spans of that trace it kept are
then only probed in the batch's window.)

Runs are maintained incrementally: only the spans this batch actually inserted are aggregated per
trace and merged with the existing row (sums, counts, min/max, distinct models). Root-derived
fields come from the best root candidate seen so far: an agent span (operation `agent`; the
earliest-starting one, i.e. the outermost) beats a parentless span of a foreign client, which beats
nothing. Until a root arrives, start/end/duration are the extent of the spans seen.

Cost is the sum of the priced LLM and tool spans, and NULL ("unknown") when none is priced: a
foreign client's unpriced model is not free. A run span that declares its own total
(`steplens.usage.cost_usd`, as the steplens kernel's does) knows nothing priced means $0, so such a
run gets 0 instead of NULL. The declared total itself is never added: children arriving in a later
batch add their own costs, and adding both would count them twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb
import pyarrow as pa

from ingest.schema import trace_key_sql
from ingest.search import pending as search_pending
from ingest.store import logs_load, scores_load, upkeep
from ingest.store.run_sql import (
    FAILURE_SIGNATURE_SQL,
    ROOT_AGENT,
    ROOT_PARENTLESS,
    SOURCE_REPORTED,
    WORKFLOW_CLASS,
)
from ingest.store.spool import Position
from tracer.conventions import (
    EVAL_CASE_ID,
    EVAL_RUN_ID,
    RELEASE_COHORT,
    RELEASE_NAME,
    RELEASE_PRIMARY_TRACE_ID,
    RUN_HANDOFF_REASON,
    RUN_HANDOFF_TARGET,
    TASK_ID,
    USAGE_COST_USD,
    OperationClass,
)

log = logging.getLogger(__name__)

DEDUP_MARGIN = timedelta(seconds=5)
# Probe windows closer than this are scanned as one; at most MAX_PROBE_WINDOWS scans per load.
PROBE_MERGE_GAP = timedelta(minutes=1)
MAX_PROBE_WINDOWS = 8

# Extents of the batch's traces that already have a run and reach outside the batch's own window.
_STORED_EXTENTS = """
SELECT coalesce(span_start, start_time) AS lo, coalesce(span_end, end_time) AS hi
FROM runs
WHERE trace_id IN (SELECT DISTINCT trace_id FROM batch) AND project IN (SELECT DISTINCT project FROM batch)
  AND (coalesce(span_start, start_time) < $lo OR coalesce(span_end, end_time) > $hi)
"""

_PROBE_WINDOW = """SELECT project, trace_id, span_id FROM spans
    WHERE start_time BETWEEN $lo{i} AND $hi{i} AND trace_id IN (SELECT DISTINCT trace_id FROM batch)"""

# Fast path check: how many of the batch's spans are duplicates, within the batch or of stored spans.
_DUPLICATES = """
WITH probe AS ({probe})
SELECT
    (SELECT count(*) - count(DISTINCT (project, trace_id, span_id)) FROM batch) AS within,
    (SELECT count(*) FROM batch b SEMI JOIN probe p
        ON p.project = b.project AND p.trace_id = b.trace_id AND p.span_id = b.span_id) AS stored
"""

# Slow path, only when duplicates exist: materialize the batch's new spans, once each.
_NEW_SPANS = """
CREATE OR REPLACE TEMP TABLE new_spans AS
WITH batch_once AS (
    SELECT * FROM batch
    QUALIFY row_number() OVER (PARTITION BY project, trace_id, span_id ORDER BY start_time) = 1
),
probe AS ({probe})
SELECT b.* FROM batch_once b ANTI JOIN probe p
    ON p.project = b.project AND p.trace_id = b.trace_id AND p.span_id = b.span_id
"""


def merge_windows(windows: list[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    """Sorted, disjoint windows covering `windows`: overlapping or near ones merged, at most
    MAX_PROBE_WINDOWS (the closest neighbours merge first)."""
    merged: list[tuple[datetime, datetime]] = []
    for lo, hi in sorted(windows):
        if merged and lo - merged[-1][1] <= PROBE_MERGE_GAP:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    while len(merged) > MAX_PROBE_WINDOWS:
        i = min(range(len(merged) - 1), key=lambda k: merged[k + 1][0] - merged[k][1])
        merged[i : i + 2] = [(merged[i][0], max(merged[i][1], merged[i + 1][1]))]
    return merged


def _probe(conn: duckdb.DuckDBPyConnection, lo: datetime, hi: datetime) -> tuple[str, dict[str, datetime]]:
    """The probe's SQL (one bounded scan per window) and its parameters, for the registered batch."""
    windows = [(lo - DEDUP_MARGIN, hi + DEDUP_MARGIN)]
    for a, b in conn.execute(_STORED_EXTENTS, {"lo": windows[0][0], "hi": windows[0][1]}).fetchall():
        if a is not None and b is not None:
            windows.append((a - DEDUP_MARGIN, b + DEDUP_MARGIN))
    merged = merge_windows(windows)
    params: dict[str, datetime] = {}
    for i, (a, b) in enumerate(merged):
        params[f"lo{i}"], params[f"hi{i}"] = a, b
    return "\n    UNION ALL\n    ".join(_PROBE_WINDOW.format(i=i) for i in range(len(merged))), params


_BATCH_RUNS = """
CREATE OR REPLACE TEMP TABLE batch_runs AS
WITH agg AS (
    SELECT project, trace_id,
        count(*) AS span_count,
        count(*) FILTER (WHERE operation = $llm) AS llm_calls,
        count(*) FILTER (WHERE operation = $tool) AS tool_calls,
        count(*) FILTER (WHERE operation = $tool AND (status = 'ERROR' OR error_type IS NOT NULL))
            AS tool_errors,
        count(*) FILTER (WHERE status = 'ERROR') AS error_spans,
        coalesce(sum(input_tokens) FILTER (WHERE operation = $llm), 0) AS input_tokens,
        coalesce(sum(output_tokens) FILTER (WHERE operation = $llm), 0) AS output_tokens,
        sum(cost_usd) FILTER (WHERE operation IN ($llm, $tool)) AS cost_usd,
        list(DISTINCT model) FILTER (WHERE operation = $llm AND model IS NOT NULL) AS models,
        min(start_time) AS span_start,
        max(end_time) AS span_end,
        -- any_value skips NULLs: the first non-NULL value of the group
        any_value(agent_name) AS any_agent,
        any_value(agent_version) AS any_version,
        any_value(service) AS any_service,
        any_value(environment) AS any_environment,
        any_value(user_id) AS any_user,
        any_value(conversation_id) AS any_conversation
    FROM new_spans
    GROUP BY project, trace_id
),
roots AS (
    -- the best root candidate per trace first, then one JSON parse of its attributes for all paths
    SELECT * EXCLUDE (attributes, r_json), r_json[1] AS r_eval_run, r_json[2] AS r_eval_case,
        r_json[3] AS r_handoff_reason, r_json[4] AS r_handoff_target, r_json[5] AS r_task_id,
        r_json[6] AS r_release_name, r_json[7] AS r_release_cohort, r_json[8] AS r_release_primary,
        r_json[9] IS NOT NULL AS r_declares_cost
    FROM (
        SELECT *, json_extract_string(attributes, [$eval_run_path, $eval_case_path, $handoff_reason_path,
            $handoff_target_path, $task_id_path, $release_name_path, $release_cohort_path, $release_primary_path,
            $declared_cost_path]) AS r_json
        FROM (
            SELECT project, trace_id,
                CASE WHEN operation IN ($agent, $workflow) THEN 2 ELSE 1 END AS r_rank,
                CASE WHEN operation IN ($agent, $workflow) THEN $root_agent ELSE $root_parentless END AS r_kind,
                span_id AS r_span_id, name AS r_name, agent_name AS r_agent, agent_version AS r_version,
                service AS r_service, environment AS r_environment, user_id AS r_user,
                conversation_id AS r_conversation, run_mode AS r_mode, start_time AS r_start,
                end_time AS r_end, duration_ms AS r_duration, status AS r_status, run_ok AS r_run_ok,
                stop_reason AS r_stop_reason, run_steps AS r_steps, attributes
            FROM new_spans
            WHERE operation IN ($agent, $workflow) OR parent_span_id IS NULL
            QUALIFY row_number() OVER (
                PARTITION BY project, trace_id
                ORDER BY r_rank DESC, start_time, parent_span_id IS NULL DESC, duration_ms DESC, span_id
            ) = 1
        )
    )
),
errs AS (
    -- the batch's latest-ending error span per trace: inner spans (rank 2) before steps (1) before
    -- roots and agent spans (0), which mostly re-raise what failed inside them; our own run span
    -- only repeats the stop reason, so it is skipped
    SELECT project, trace_id,
        CASE WHEN operation IN ($agent, $workflow) OR parent_span_id IS NULL THEN 0 WHEN operation = $step THEN 1 ELSE 2 END
            AS e_rank,
        end_time AS e_at, span_id AS e_span_id, operation AS e_kind, tool_name AS e_tool,
        error_type AS e_type, error_template AS e_template
    FROM new_spans
    WHERE (status = 'ERROR' OR error_type IS NOT NULL) AND NOT (operation = $agent AND stop_reason IS NOT NULL)
    QUALIFY row_number() OVER (PARTITION BY project, trace_id ORDER BY e_rank DESC, end_time DESC, span_id DESC) = 1
)
SELECT * FROM agg LEFT JOIN roots USING (project, trace_id) LEFT JOIN errs USING (project, trace_id)
"""

_OLD_RUNS = """
CREATE OR REPLACE TEMP TABLE old_runs AS
SELECT o.* FROM runs o SEMI JOIN batch_runs b ON o.project = b.project AND o.trace_id = b.trace_id
"""

_MERGED_RUNS = f"""
CREATE OR REPLACE TEMP TABLE merged_runs AS
WITH w AS (
    SELECT b.project, b.trace_id,
        coalesce(b.r_rank, 0) > 0 AND (
            o.trace_id IS NULL
            OR b.r_rank > coalesce(CASE o.root_kind WHEN $root_agent THEN 2 WHEN $root_parentless THEN 1 END, 0)
            OR (b.r_rank = CASE o.root_kind WHEN $root_agent THEN 2 WHEN $root_parentless THEN 1 END
                AND b.r_start < o.start_time)
        ) AS wins,
        b.e_rank IS NOT NULL AND (
            o.last_error_rank IS NULL
            OR b.e_rank > o.last_error_rank
            OR (b.e_rank = o.last_error_rank AND b.e_at > o.last_error_at)
            OR (b.e_rank = o.last_error_rank AND b.e_at = o.last_error_at AND b.e_span_id > o.last_error_span_id)
        ) AS err_wins
    FROM batch_runs b LEFT JOIN old_runs o ON o.project = b.project AND o.trace_id = b.trace_id
),
m AS (
    SELECT project, trace_id,
        CASE WHEN wins THEN b.r_span_id ELSE o.root_span_id END AS root_span_id,
        CASE WHEN wins THEN b.r_kind ELSE o.root_kind END AS root_kind,
        CASE WHEN wins THEN b.r_name ELSE o.name END AS name,
        CASE WHEN wins THEN coalesce(b.r_agent, o.agent, b.any_agent) ELSE coalesce(o.agent, b.any_agent) END
            AS agent,
        CASE WHEN wins THEN coalesce(b.r_version, o.version, b.any_version)
            ELSE coalesce(o.version, b.any_version) END AS version,
        CASE WHEN wins THEN coalesce(b.r_service, o.service, b.any_service)
            ELSE coalesce(o.service, b.any_service) END AS service,
        CASE WHEN wins THEN coalesce(b.r_environment, o.environment, b.any_environment)
            ELSE coalesce(o.environment, b.any_environment) END AS environment,
        CASE WHEN wins THEN coalesce(b.r_user, o.user_id, b.any_user) ELSE coalesce(o.user_id, b.any_user) END
            AS user_id,
        CASE WHEN wins THEN coalesce(b.r_conversation, o.conversation_id, b.any_conversation)
            ELSE coalesce(o.conversation_id, b.any_conversation) END AS conversation_id,
        CASE WHEN wins THEN coalesce(b.r_mode, o.mode) ELSE o.mode END AS mode,
        CASE WHEN wins THEN coalesce(b.r_eval_run, o.eval_run_id) ELSE o.eval_run_id END AS eval_run_id,
        CASE WHEN wins THEN coalesce(b.r_eval_case, o.eval_case_id) ELSE o.eval_case_id END AS eval_case_id,
        least(o.span_start, b.span_start) AS span_start,
        greatest(o.span_end, b.span_end) AS span_end,
        CASE WHEN wins THEN b.r_start WHEN o.root_kind IS NOT NULL THEN o.start_time
            ELSE least(o.span_start, b.span_start) END AS start_time,
        CASE WHEN wins THEN b.r_end WHEN o.root_kind IS NOT NULL THEN o.end_time
            ELSE greatest(o.span_end, b.span_end) END AS end_time,
        CASE WHEN wins THEN b.r_duration WHEN o.root_kind IS NOT NULL THEN o.duration_ms END AS root_duration,
        CASE WHEN wins THEN coalesce(b.r_run_ok, b.r_status <> 'ERROR') ELSE o.ok END AS ok,
        CASE WHEN wins THEN b.r_stop_reason ELSE o.stop_reason END AS stop_reason,
        CASE WHEN wins THEN b.r_steps ELSE o.steps END AS steps,
        CASE WHEN wins THEN b.r_handoff_reason ELSE o.handoff_reason END AS handoff_reason,
        CASE WHEN wins THEN b.r_handoff_target ELSE o.handoff_target END AS handoff_target,
        CASE WHEN wins THEN b.r_task_id ELSE o.task_id END AS task_id,
        CASE WHEN wins THEN b.r_release_name ELSE o.release_name END AS release_name,
        CASE WHEN wins THEN b.r_release_cohort ELSE o.release_cohort END AS release_cohort,
        CASE WHEN wins THEN b.r_release_primary ELSE o.release_primary_trace_id END AS release_primary_trace_id,
        CASE WHEN wins THEN CASE WHEN b.r_stop_reason IS NOT NULL THEN $reported END ELSE o.stop_reason_source END
            AS stop_reason_source,
        o.failure_evidence AS failure_evidence,
        o.agents AS agents,
        o.is_run AS is_run,
        coalesce(o.llm_calls, 0) + b.llm_calls AS llm_calls,
        coalesce(o.tool_calls, 0) + b.tool_calls AS tool_calls,
        coalesce(o.tool_errors, 0) + b.tool_errors AS tool_errors,
        coalesce(o.error_spans, 0) + b.error_spans AS error_spans,
        coalesce(o.input_tokens, 0) + b.input_tokens AS input_tokens,
        coalesce(o.output_tokens, 0) + b.output_tokens AS output_tokens,
        CASE WHEN o.cost_usd IS NULL AND b.cost_usd IS NULL THEN
                CASE WHEN wins AND b.r_declares_cost THEN 0.0 END
            WHEN o.cost_usd IS NULL THEN b.cost_usd WHEN b.cost_usd IS NULL THEN o.cost_usd
            ELSE o.cost_usd + b.cost_usd END AS cost_usd,
        list_sort(list_distinct(list_concat(coalesce(o.models, []::VARCHAR[]), coalesce(b.models, []::VARCHAR[]))))
            AS models,
        CASE WHEN err_wins THEN b.e_rank ELSE o.last_error_rank END AS last_error_rank,
        CASE WHEN err_wins THEN b.e_at ELSE o.last_error_at END AS last_error_at,
        CASE WHEN err_wins THEN b.e_span_id ELSE o.last_error_span_id END AS last_error_span_id,
        CASE WHEN err_wins THEN b.e_kind ELSE o.last_error_kind END AS last_error_kind,
        CASE WHEN err_wins THEN b.e_tool ELSE o.last_error_tool END AS last_error_tool,
        CASE WHEN err_wins THEN b.e_type ELSE o.last_error_type END AS last_error_type,
        CASE WHEN err_wins THEN b.e_template ELSE o.last_error_template END AS last_error_template,
        coalesce(o.span_count, 0) + b.span_count AS span_count
    FROM batch_runs b JOIN w USING (project, trace_id) LEFT JOIN old_runs o USING (project, trace_id)
)
SELECT * EXCLUDE (root_duration),
    coalesce(root_duration, date_diff('microsecond', start_time, end_time) / 1000.0) AS duration_ms,
    {FAILURE_SIGNATURE_SQL} AS failure_signature,
    $now AS updated_at
FROM m
"""

_REPLACE_RUNS = [
    "DELETE FROM runs USING merged_runs m WHERE runs.project = m.project AND runs.trace_id = m.trace_id",
    "INSERT INTO runs BY NAME SELECT * FROM merged_runs",
]

# Runs seen for the first time get their trace_index row (insert-only; see ingest/schema.py).
_TRACE_INDEX = f"""
INSERT INTO trace_index
SELECT coalesce({trace_key_sql("m.trace_id")}, 0), m.project, m.trace_id, m.span_start
FROM merged_runs m ANTI JOIN old_runs o ON o.project = m.project AND o.trace_id = m.trace_id
"""

_CLEANUP = [
    "DROP TABLE IF EXISTS new_spans",
    "DROP TABLE IF EXISTS batch_runs",
    "DROP TABLE IF EXISTS old_runs",
    "DROP TABLE IF EXISTS merged_runs",
]

_RUN_PARAMS = {
    "step": OperationClass.STEP.value,
    "llm": OperationClass.LLM.value,
    "tool": OperationClass.TOOL.value,
    "agent": OperationClass.AGENT.value,
    "workflow": WORKFLOW_CLASS,
    "root_agent": ROOT_AGENT,
    "root_parentless": ROOT_PARENTLESS,
    "eval_run_path": f'$."{EVAL_RUN_ID}"',
    "eval_case_path": f'$."{EVAL_CASE_ID}"',
    "handoff_reason_path": f'$."{RUN_HANDOFF_REASON}"',
    "handoff_target_path": f'$."{RUN_HANDOFF_TARGET}"',
    "task_id_path": f'$."{TASK_ID}"',
    "release_name_path": f'$."{RELEASE_NAME}"',
    "release_cohort_path": f'$."{RELEASE_COHORT}"',
    "release_primary_path": f'$."{RELEASE_PRIMARY_TRACE_ID}"',
    "declared_cost_path": f'$."{USAGE_COST_USD}"',
}


@dataclass(frozen=True)
class LoadResult:
    received: int
    inserted: int
    logs_received: int = 0  # log records (ingest/store/logs_load.py) of the same transaction
    logs_inserted: int = 0
    scores_received: int = 0  # scores (ingest/store/scores_load.py) of the same transaction
    scores_written: int = 0  # new or replacing rows

    @property
    def duplicates(self) -> int:
        return self.received - self.inserted


def ensure_position_row(conn: duckdb.DuckDBPyConnection, now: datetime) -> None:
    conn.execute(
        "INSERT INTO spool_position SELECT 0, 0, $now WHERE NOT EXISTS (SELECT 1 FROM spool_position)",
        {"now": now},
    )


def read_position(conn: duckdb.DuckDBPyConnection) -> Position:
    rows = conn.execute('SELECT segment, "offset" FROM spool_position LIMIT 1').fetchall()
    return Position(int(rows[0][0]), int(rows[0][1])) if rows else Position(0, 0)


def _set_position(conn: duckdb.DuckDBPyConnection, position: Position, now: datetime) -> None:
    conn.execute(
        'UPDATE spool_position SET segment = $seg, "offset" = $off, updated_at = $now',
        {"seg": position.segment, "off": position.offset, "now": now},
    )


def load_batch(
    conn: duckdb.DuckDBPyConnection,
    table: pa.Table | None,
    position: Position,
    now: datetime,
    logs: pa.Table | None = None,
    scores: pa.Table | None = None,
) -> LoadResult:
    """Insert `table`'s new spans, merge runs, queue upkeep and record `position`, atomically.

    `table` has exactly SPANS_DDL's columns (or is None/empty: only the position moves, which is
    how records that normalized to nothing still advance the mark). `logs`: log record rows of the
    same spool batch, inserted in the same transaction; `scores`: its scores, likewise.
    """
    received = 0 if table is None else table.num_rows
    conn.execute("BEGIN TRANSACTION")
    try:
        inserted = 0
        if received:
            # The Arrow batch is scanned in place; only when the cheap duplicate count finds any is
            # a deduplicated copy materialized under the same name.
            conn.register("batch", table)
            view = False
            try:
                lo, hi = conn.execute("SELECT min(start_time), max(start_time) FROM batch").fetchall()[0]
                probe, window = _probe(conn, lo, hi)
                within, stored = conn.execute(_DUPLICATES.format(probe=probe), window).fetchall()[0]
                if within or stored:
                    conn.execute(_NEW_SPANS.format(probe=probe), window)
                    inserted = conn.execute("SELECT count(*) FROM new_spans").fetchall()[0][0]
                else:
                    conn.register("new_spans", table)
                    view, inserted = True, received
                if inserted:
                    conn.execute("INSERT INTO spans BY NAME SELECT * FROM new_spans")
                    if scores_load.has_evaluation_events(table):  # evaluation events are scores too
                        scores_load.insert_span_evaluation_scores(conn, "new_spans")
                    conn.execute(_BATCH_RUNS, _RUN_PARAMS)
                    conn.execute(_OLD_RUNS)
                    conn.execute(
                        _MERGED_RUNS,
                        {"root_agent": ROOT_AGENT, "root_parentless": ROOT_PARENTLESS, "reported": SOURCE_REPORTED, "now": now},
                    )
                    for statement in _REPLACE_RUNS:
                        conn.execute(statement)
                    conn.execute(_TRACE_INDEX)
                    upkeep.queue(conn, now)
                    search_pending.queue(conn, now)
            finally:
                _unregister(conn, "batch", *(["new_spans"] if view else []))
            for statement in _CLEANUP:
                conn.execute(statement)
        logs_inserted = logs_load.insert_logs(conn, logs) if logs is not None else 0
        scores_written = scores_load.insert_scores(conn, scores) if scores is not None else 0
        _set_position(conn, position, now)
        conn.execute("COMMIT")
    except BaseException:
        _rollback(conn)
        raise
    return LoadResult(
        received=received,
        inserted=int(inserted),
        logs_received=0 if logs is None else logs.num_rows,
        logs_inserted=logs_inserted,
        scores_received=0 if scores is None else scores.num_rows,
        scores_written=scores_written,
    )


def _unregister(conn: duckdb.DuckDBPyConnection, *names: str) -> None:
    """Drop the batch's Arrow views. After a failed statement the transaction is aborted and this
    fails too ("Current transaction is aborted"): that must not replace the statement's own error,
    which says whether the record is poison or the environment failed (ingest/store/failures.py)."""
    for name in names:
        try:
            conn.unregister(name)
        except duckdb.Error as exc:
            log.debug("unregistering %s after a failed load: %s", name, exc)


def _rollback(conn: duckdb.DuckDBPyConnection) -> None:
    """Roll back, keeping the original error: a failed ROLLBACK (connection gone) is only logged."""
    try:
        conn.execute("ROLLBACK")
    except duckdb.Error as exc:
        log.error("rollback failed: %s", exc)
