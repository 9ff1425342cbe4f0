"""Loading spool records into ClickHouse, exactly once, and keeping runs current.

Exactly once, without transactions: each spool record is one INSERT per table carrying an
`insert_deduplication_token` made of the spool's id and the record's position, so the same record
inserted again (a replay after a crash, a retry after a timeout whose insert did land) is dropped by
ClickHouse itself. Spans already stored (a client's retried export, possibly a different record)
are removed before the insert by an anti-join on (project, trace_id, span_id) over the traces of
the batch, and the ReplacingMergeTree key is the last line for two ingest nodes racing.

Runs: the rules that turn a trace's spans into its runs row (the load merge of
ingest/store/loading.py and the trace-level derivation of ingest/store/run_derive.py) have one
implementation, run here over a scratch in-memory DuckDB holding only the touched traces' spans
read back from ClickHouse; the resulting rows are inserted into ClickHouse's `runs` with a higher
`revision`, so a late span replaces the run (ReplacingMergeTree). The two stores cannot disagree
about what a run is, and no derivation SQL is written twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ingest.normalize import SPANS_SCHEMA
from ingest.store.clickhouse import search_load
from ingest.store.clickhouse.cursor import naive_utc
from ingest.store.clickhouse.schema import ANALYTICS_TABLES, LOG_RECORDS, RUNS, SCORES, SPANS, Table
from ingest.store.clickhouse.transport import Transport
from ingest.store.spool import Position

Trace = tuple[str, str]


def _quoted(database: str, table: str) -> str:
    return f"`{database}`.`{table}`"


def for_table(rows: pa.Table, table: Table) -> pa.Table:
    """`rows` with exactly `table`'s columns in its order (absent ones NULL, JSON as text), which is
    what a positional `INSERT ... SELECT *` and a by-name insert both take."""
    columns = []
    for name, ch_type in table.columns:
        if name in rows.column_names:
            column = rows.column(name)
            if isinstance(column.type, pa.ExtensionType):  # arrow.json: its text
                column = pa.chunked_array([c.storage for c in column.chunks], column.type.storage_type)
            if pa.types.is_timestamp(column.type) and column.type.tz is not None:
                column = pc.cast(column, pa.timestamp("us"))
            if column.null_count and not ch_type.startswith(("Nullable", "Array")):
                # ClickHouse would store the type's default instead: refuse, as DuckDB's NOT NULL does
                raise ValueError(f"{table.name}.{name} must not be NULL ({column.null_count} row(s))")
        elif ch_type.startswith("Array"):
            column = pa.chunked_array([pa.array([[]] * rows.num_rows, pa.list_(pa.string()))])
        else:
            column = pa.chunked_array([pa.nulls(rows.num_rows)])
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)


def _traces(rows: pa.Table) -> list[Trace]:
    pairs = zip(rows.column("project").to_pylist(), rows.column("trace_id").to_pylist(), strict=True)
    return sorted(set(pairs))


def _by_project(traces: Iterable[Trace]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for project, trace_id in traces:
        out.setdefault(project, []).append(trace_id)
    return out


def stored_span_keys(transport: Transport, database: str, traces: Iterable[Trace]) -> set[tuple[str, str, str]]:
    """(project, trace_id, span_id) of the spans already stored for `traces`."""
    keys: set[tuple[str, str, str]] = set()
    for project, trace_ids in _by_project(traces).items():
        found = transport.query_arrow(
            f"SELECT trace_id, span_id FROM {_quoted(database, 'spans')} "
            "WHERE project = {project:String} AND trace_id IN {trace_ids:Array(String)}",
            {"project": project, "trace_ids": trace_ids},
        )
        keys.update((project, t, s) for t, s in zip(found.column(0).to_pylist(), found.column(1).to_pylist(), strict=True))
    return keys


def new_spans(rows: pa.Table, stored: set[tuple[str, str, str]]) -> pa.Table:
    """The rows of `rows` not stored yet, each (project, trace_id, span_id) once (the first)."""
    seen = set(stored)
    keep = []
    for key in zip(
        rows.column("project").to_pylist(), rows.column("trace_id").to_pylist(), rows.column("span_id").to_pylist(),
        strict=True,
    ):
        keep.append(key not in seen)
        seen.add(key)
    return rows.filter(pa.array(keep, pa.bool_())) if not all(keep) else rows


def insert(transport: Transport, database: str, table: Table, rows: pa.Table, token: str) -> None:
    """One deduplicated insert of `rows` into `table`."""
    if rows.num_rows:
        transport.insert_arrow(
            _quoted(database, table.name), for_table(rows, table), {"insert_deduplication_token": token}
        )


def _micros(column: pa.ChunkedArray | pa.Array) -> list[int]:
    """Timestamps as microseconds since the epoch (a zone-aware column is UTC)."""
    if pa.types.is_timestamp(column.type) and column.type.tz is not None:
        column = pc.cast(column, pa.timestamp("us"))
    return pc.cast(pc.cast(column, pa.timestamp("us")), pa.int64()).to_pylist()


def stored_score_times(transport: Transport, database: str, rows: pa.Table) -> dict[tuple[str, str], int]:
    """(project, score_id) -> the stored `created_at` (µs) of the ids in `rows` (the latest version)."""
    stored: dict[tuple[str, str], int] = {}
    projects, ids = rows.column("project").to_pylist(), rows.column("score_id").to_pylist()
    for project in set(projects):
        keys = sorted({k for p, k in zip(projects, ids, strict=True) if p == project})
        found = transport.query_arrow(
            f"SELECT score_id, created_at FROM {_quoted(database, SCORES.name)} FINAL "
            "WHERE project = {project:String} AND score_id IN {keys:Array(String)}",
            {"project": project, "keys": keys},
        )
        stored.update(((project, k), t) for k, t in zip(found.column(0).to_pylist(), _micros(found.column(1)),
                                                        strict=True))
    return stored


def scores_to_write(rows: pa.Table, stored: dict[tuple[str, str], int]) -> pa.Table:
    """DuckDB's replacement rule (ingest/store/scores_load.py): per (project, score_id) the latest
    `created_at` of the batch, the first sent of equal ones, and only when it is later than the
    stored score's; an equal or older one (a retry, a late duplicate) is ignored."""
    best: dict[tuple[str, str], tuple[int, int]] = {}  # key -> (created_at, row)
    keys = zip(rows.column("project").to_pylist(), rows.column("score_id").to_pylist(), strict=True)
    for row, (key, at) in enumerate(zip(keys, _micros(rows.column("created_at")), strict=True)):
        if key not in best or at > best[key][0]:
            best[key] = (at, row)
    keep = sorted(row for key, (at, row) in best.items() if key not in stored or at > stored[key])
    return rows.take(pa.array(keep, pa.int64())) if len(keep) != rows.num_rows else rows


def load_scores(transport: Transport, database: str, rows: pa.Table, token: str) -> int:
    """Insert the scores of one spool record that replace or add a score (see `scores_to_write`);
    returns how many. The replacing row's later `ingested_at` is its version (ReplacingMergeTree)."""
    if not rows.num_rows:
        return 0
    fresh = scores_to_write(rows, stored_score_times(transport, database, rows))
    insert(transport, database, SCORES, fresh, token)
    return fresh.num_rows


def load_spans(transport: Transport, database: str, rows: pa.Table, token: str) -> tuple[int, list[Trace]]:
    """Insert the spans of one spool record not stored yet; returns (inserted, the record's traces).
    Every trace of the record is returned, inserted or not, so a replay re-derives its runs."""
    traces = _traces(rows)
    fresh = new_spans(rows, stored_span_keys(transport, database, traces))
    search_load.load_docs(transport, database, fresh, token)  # before the spans: see search_load.py
    insert(transport, database, SPANS, fresh, token)
    return fresh.num_rows, traces


@dataclass
class SpanBatch:
    """What one batch insert of spans did: `fresh` the rows inserted; `continued` the traces that
    already had spans stored before it (their other spans are only in ClickHouse)."""

    received: int
    fresh: pa.Table
    traces: list[Trace]
    continued: set[Trace]

    @property
    def inserted(self) -> int:
        return self.fresh.num_rows


def load_span_batch(transport: Transport, database: str, tables: list[pa.Table], token: str) -> SpanBatch:
    """Insert the spans of several spool records not stored yet, in ONE insert under `token`.

    Why one insert: each ClickHouse insert writes a part and costs a fixed ~10 ms (more on a busy
    server) whatever its size, and each anti-join query a few ms, so a record of a few hundred
    spans paid far more for the round trips than for its rows. The anti-join is the same rule as
    `load_spans` over the whole batch (the first of each key wins, across records too)."""
    rows = tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="permissive")
    traces = _traces(rows)
    stored = stored_span_keys(transport, database, traces)
    fresh = new_spans(rows, stored)
    search_load.load_docs(transport, database, fresh, token)  # before the spans: see search_load.py
    insert(transport, database, SPANS, fresh, token)
    return SpanBatch(rows.num_rows, fresh, traces, {(p, t) for p, t, _ in stored})


def _trace_mask(rows: pa.Table, traces: set[Trace]) -> pa.Array:
    pairs = zip(rows.column("project").to_pylist(), rows.column("trace_id").to_pylist(), strict=True)
    return pa.array([pair in traces for pair in pairs], pa.bool_())


def derivation_spans(
    transport: Transport, database: str, traces: list[Trace], local: SpanBatch | None
) -> tuple[pa.Table, set[Trace]]:
    """Every stored span of `traces`, and the traces known to have had nothing derived before.

    With `local` (the batch just inserted), a trace that had no spans stored before it and whose
    keys in ClickHouse now are exactly the batch's (no other node added any) is taken from the
    batch's own rows instead of being read back: the usual fresh trace costs one key query for
    the whole batch instead of its full rows. Called after the revision is taken, so of two nodes
    deriving one trace the one that checked later, whose revision wins, saw the other's spans
    (and then reads the trace back in full)."""
    if local is None or not local.fresh.num_rows:
        return read_spans(transport, database, traces), set()
    now_stored: dict[Trace, set[str]] = {}
    for project, trace_id, span_id in stored_span_keys(transport, database, traces):
        now_stored.setdefault((project, trace_id), set()).add(span_id)
    ours: dict[Trace, set[str]] = {}
    for project, trace_id, span_id in zip(
        local.fresh.column("project").to_pylist(), local.fresh.column("trace_id").to_pylist(),
        local.fresh.column("span_id").to_pylist(), strict=True,
    ):  # fmt: skip
        ours.setdefault((project, trace_id), set()).add(span_id)
    new = {t for t in traces if t not in local.continued and t in ours and now_stored.get(t) == ours[t]}
    parts = []
    if new:
        own = local.fresh.filter(_trace_mask(local.fresh, new))
        parts.append(own.select(SPANS_SCHEMA.names).cast(SPANS_SCHEMA))
    others = [t for t in traces if t not in new]
    if others:
        parts.append(read_spans(transport, database, others))
    return (parts[0] if len(parts) == 1 else pa.concat_tables(parts)), new


def load_logs(transport: Transport, database: str, rows: pa.Table, token: str) -> pa.Table:
    """Insert the log records of one spool record not stored yet (by their content key); returns
    the new ones (their evaluation results become scores)."""
    stored: set[tuple[str, str]] = set()
    for project in set(rows.column("project").to_pylist()):
        keys = [k for p, k in zip(rows.column("project").to_pylist(), rows.column("record_key").to_pylist(),
                                  strict=True) if p == project]
        found = transport.query_arrow(
            f"SELECT record_key FROM {_quoted(database, 'log_records')} "
            "WHERE project = {project:String} AND record_key IN {keys:Array(String)}",
            {"project": project, "keys": keys},
        )
        stored.update((project, k) for k in found.column(0).to_pylist())
    keep = []
    for key in zip(rows.column("project").to_pylist(), rows.column("record_key").to_pylist(), strict=True):
        keep.append(key not in stored)
        stored.add(key)
    fresh = rows.filter(pa.array(keep, pa.bool_())) if not all(keep) else rows
    insert(transport, database, LOG_RECORDS, fresh, token)
    return fresh


def insert_scores(transport: Transport, database: str, tables: list[pa.Table], token: str) -> int:
    """One deduplicated insert of the scores of one or more spool records that replace or add a
    score (`scores_to_write`: a score id keeps its latest `created_at`, as on DuckDB); returns how many."""
    rows = tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="permissive")
    if not rows.num_rows:
        return 0
    fresh = scores_to_write(rows, stored_score_times(transport, database, rows))
    insert(transport, database, SCORES, fresh, token)
    return fresh.num_rows


def store_scores(transport: Transport, database: str, scores: pa.Table) -> None:
    """Insert scores derived from spans or log records; the same score id replaces (FINAL)."""
    if scores.num_rows:
        transport.insert_arrow(_quoted(database, SCORES.name), for_table(scores, SCORES))


def read_spans(transport: Transport, database: str, traces: Iterable[Trace]) -> pa.Table:
    """Every stored span of `traces` (one row per span), as the normalizer's Arrow schema."""
    parts = []
    names = SPANS_SCHEMA.names
    select = ", ".join(f"`{n}`" for n in names)
    for project, trace_ids in _by_project(traces).items():
        parts.append(
            naive_utc(transport.query_arrow(
                f"SELECT {select} FROM {_quoted(database, 'spans')} FINAL "
                "WHERE project = {project:String} AND trace_id IN {trace_ids:Array(String)}",
                {"project": project, "trace_ids": trace_ids},
            ))
        )  # fmt: skip
    if not parts:
        return SPANS_SCHEMA.empty_table()
    table = pa.concat_tables(parts)
    columns = []
    for field in SPANS_SCHEMA:
        column = table.column(field.name)
        if isinstance(field.type, pa.ExtensionType):
            column = pa.chunked_array(
                [pa.ExtensionArray.from_storage(field.type, c.cast(pa.string())) for c in column.chunks],
                field.type,
            )
        else:
            column = column.cast(field.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=SPANS_SCHEMA)


class RunDeriver:
    """The runs rows of touched traces, computed by the shared DuckDB rules on a scratch database."""

    def __init__(self) -> None:
        from ingest.store.loading import ensure_position_row
        from ingest.store.migrate import migrate

        self._conn = duckdb.connect(":memory:")
        migrate(self._conn)
        ensure_position_row(self._conn, datetime(1970, 1, 1))
        self._tables = [
            r[0]
            for r in self._conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
                "AND table_name NOT IN ('schema_migrations', 'spool_position')"
            ).fetchall()
        ]

    def runs(self, spans: pa.Table, now: datetime) -> pa.Table:
        """The runs rows (DuckDB's columns) of the traces whose every span is in `spans`."""
        return self.derive(spans, None, now)[0]

    def derive(self, spans: pa.Table | None, logs: pa.Table | None, now: datetime) -> tuple[pa.Table, pa.Table]:
        """(runs, scores): the runs rows of the traces whose every span is in `spans`, and the scores
        their evaluation span events and the evaluation results among `logs` (new log records) are.
        The analytics rows of those traces are then in `analytics()`."""
        from ingest.store import upkeep
        from ingest.store.loading import load_batch

        conn = self._conn
        for table in self._tables:
            conn.execute(f"DELETE FROM {table}")  # names from information_schema, not input
        if (spans is not None and spans.num_rows) or (logs is not None and logs.num_rows):
            load_batch(conn, spans, Position(0, 0), now, logs)
            while upkeep.pending(conn):
                upkeep.run_pass(conn, max_traces=100_000)
        return conn.sql("SELECT * FROM runs").to_arrow_table(), conn.sql("SELECT * FROM scores").to_arrow_table()

    def analytics(self) -> dict[str, pa.Table]:
        """The analytics rows (tool calls, carry, run models, plan spans) of the last `derive`."""
        return {t.name: self._conn.sql(f"SELECT * FROM {t.name}").to_arrow_table() for t in ANALYTICS_TABLES}

    def close(self) -> None:
        self._conn.close()


def store_runs(transport: Transport, database: str, runs: pa.Table, revision: int | None = None) -> None:
    """Insert new versions of `runs` under `revision` (default: nanoseconds now; higher wins). No
    dedup token: a replay derives the same rows again under a new revision, which replaces."""
    if not runs.num_rows:
        return
    revisions = pa.array([revision or time.time_ns()] * runs.num_rows, pa.uint64())
    rows = for_table(runs.append_column("revision", revisions), RUNS)
    transport.insert_arrow(_quoted(database, RUNS.name), rows)


def replace_trace_rows(
    transport: Transport, database: str, table: Table, rows: pa.Table, traces: Iterable[Trace], revision: int,
    new: set[Trace] | frozenset[Trace] = frozenset(),
) -> None:
    """Make `rows` the whole current set of `table` for `traces`: insert them under `revision` and a
    tombstone (is_deleted) for every stored key of those traces that is no longer among them.
    `new`: traces that had no spans stored before, hence no rows yet; their stored keys are not read."""
    key = table.per_trace_key
    current = {tuple(r[k] for k in key) for r in rows.select(list(key)).to_pylist()} if rows.num_rows else set()
    gone: list[tuple] = []
    select = ", ".join(f"`{k}`" for k in key)
    for project, trace_ids in _by_project(t for t in traces if t not in new).items():
        stored = transport.query_arrow(
            f"SELECT {select} FROM {_quoted(database, table.name)} FINAL "
            "WHERE project = {project:String} AND trace_id IN {trace_ids:Array(String)}",
            {"project": project, "trace_ids": trace_ids},
        )
        gone += [k for k in (tuple(r[c] for c in key) for r in stored.to_pylist()) if k not in current]
    if rows.num_rows:
        marks = {"revision": pa.array([revision] * rows.num_rows, pa.uint64()),
                 "is_deleted": pa.array([0] * rows.num_rows, pa.uint8())}
        live = rows
        for name, column in marks.items():
            live = live.append_column(name, column)
        transport.insert_arrow(_quoted(database, table.name), for_table(live, table))
    if gone:
        columns = {k: [g[i] for g in gone] for i, k in enumerate(key)}
        types = dict(table.columns)
        arrays = [pa.array(v, pa.string() if "String" in types[k] else None) for k, v in columns.items()]
        tombstones = pa.Table.from_arrays(
            [*arrays, pa.array([revision] * len(gone), pa.uint64()), pa.array([1] * len(gone), pa.uint8())],
            names=[*key, "revision", "is_deleted"],
        )
        transport.insert_arrow(_quoted(database, table.name), tombstones)
