"""Copying a DuckDB store into ClickHouse: every table both schemas have, in chunks, idempotently.

Why chunks: a store of 10M spans does not fit in memory at once; each chunk is one streamed batch of
the DuckDB scan (insertion order, deterministic for an unchanged file) and one ClickHouse insert.

Why re-running never duplicates:
- spans: each chunk is anti-joined against the (project, trace_id, span_id) already in ClickHouse,
  the live loader's rule (ingest/store/clickhouse/load.py), so a span is inserted once whatever
  copied it before (this command, or an ingest node that received it again);
- every insert carries an `insert_deduplication_token` made of a hash of the chunk's rows, so the
  same chunk inserted again (a re-run, a retry after a timeout that did land) is dropped by
  ClickHouse itself;
- and every table is a ReplacingMergeTree on its key, the last line if the source changed between
  runs (a run row updated in DuckDB replaces the copied one; runs and the derived tables copied get
  revision 1, below any revision a live node writes).

Why resumable: after each chunk, `<db>.migrate.json` records how many chunks of each table are in
ClickHouse, for this target and this exact source file (size and mtime). A re-run after an
interruption skips those chunks (read, not inserted); a changed file starts over, safely.

The source must not be open by a server: DuckDB lets no other process open a file while one writes
it. The copy opens it read-only and says so clearly when it is held.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from ingest.copy_store.target import Target
from ingest.errors import ConfigError
from ingest.store.clickhouse import load, search_load
from ingest.store.clickhouse.migrate import migrate
from ingest.store.clickhouse.schema import SPANS, TABLES, Table
from ingest.store.clickhouse.transport import Transport, open_transport

DEFAULT_CHUNK_ROWS = 20_000
MIGRATED_REVISION = 1  # below the nanosecond revisions live upkeep writes: a live rebuild wins
_LOCK_PID = re.compile(r"PID (\d+)")


@dataclass
class TablePlan:
    """One table to copy: its ClickHouse definition, the columns both sides have, its row count."""

    table: Table
    columns: list[str]
    rows: int


@dataclass
class TableResult:
    name: str
    source_rows: int
    inserted: int  # rows ClickHouse holds now and did not before this run (0 when all were there)
    chunks: int
    skipped_chunks: int  # done by an earlier, interrupted run of the same copy


def open_source(path: Path) -> duckdb.DuckDBPyConnection:
    """The DuckDB file, read-only; ConfigError saying what to do when it is missing or held."""
    if not path.is_file():
        raise ConfigError(f"{path} does not exist: pass the server's database file to --from (see `--db`)")
    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.IOException as exc:
        text = str(exc)
        if "lock" not in text.lower():
            raise ConfigError(f"cannot open {path}: {text}") from None
        pid = _LOCK_PID.search(text)
        holder = f" (PID {pid[1]})" if pid else ""
        raise ConfigError(
            f"{path} is held by a running process{holder}, most likely `steplens serve`: DuckDB lets no other "
            "process open the file meanwhile. Stop the server (SIGTERM loads its spool into the file first), "
            "then run steplens migrate again"
        ) from None


def plan(conn: duckdb.DuckDBPyConnection) -> list[TablePlan]:
    """The ClickHouse tables the DuckDB file also has, with their common columns (names from the
    ClickHouse schema: an allow-list, never input)."""
    have: dict[str, set[str]] = {}
    for table_name, column_name in conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'main'"
    ).fetchall():
        have.setdefault(table_name, set()).add(column_name)
    plans = []
    for table in TABLES:
        if table.name not in have:
            continue
        columns = [c for c in table.column_names if c in have[table.name]]
        # fetchall, not fetchone: a half-fetched result would block the streamed reads that follow
        ((rows,),) = conn.execute(f'SELECT count(*) FROM "{table.name}"').fetchall()
        plans.append(TablePlan(table, columns, int(rows)))
    return plans


def not_copied(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """DuckDB tables with no ClickHouse counterpart (derived rollups, DuckDB-only bookkeeping)."""
    names = {r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' AND table_type = 'BASE TABLE'"
    ).fetchall()}
    return sorted(names - {t.name for t in TABLES})


class ResumeFile:
    """`<db>.migrate.json`: chunks done per (target, table), valid for one exact source file."""

    def __init__(self, source: Path, target: Target) -> None:
        self.path = source.with_name(source.name + ".migrate.json")
        stat = source.stat()
        self._source = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        self._key = f"{target.url} {target.database}"
        doc = self._read()
        entry = doc.get(self._key, {})
        self.done: dict[str, int] = entry.get("chunks", {}) if entry.get("source") == self._source else {}

    def _read(self) -> dict:
        try:
            doc = json.loads(self.path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return doc if isinstance(doc, dict) else {}

    def mark(self, table: str, chunks: int) -> None:
        self.done[table] = chunks
        doc = self._read()
        doc[self._key] = {"source": self._source, "chunks": self.done}
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=1))
        tmp.replace(self.path)


def _token(table: Table, rows: pa.Table) -> str:
    """The chunk's dedup token: a hash of its values (same rows, same token, whatever the run). Values,
    not Arrow buffers: the bytes under a NULL slot are arbitrary, so two reads of one row can differ
    there. Spans hash their keys only: a span whose key is stored is dropped by the anti-join anyway."""
    keyed = rows.select(list(table.order_by)) if table is SPANS else rows
    text = json.dumps(keyed.to_pylist(), default=str, sort_keys=True, ensure_ascii=False)
    return f"steplens-migrate:{table.name}:{hashlib.blake2b(text.encode(), digest_size=16).hexdigest()}"


def _no_null_lists(rows: pa.Table, table: Table) -> pa.Table:
    """ClickHouse arrays are never NULL: a NULL list (DuckDB allows it) becomes an empty one."""
    for name, ch_type in table.columns:
        if ch_type.startswith("Array") and name in rows.column_names:
            column = rows.column(name)
            if column.null_count:
                fixed = pa.array([v if v is not None else [] for v in column.to_pylist()], column.type)
                rows = rows.set_column(rows.column_names.index(name), name, fixed)
    return rows


def _chunks(conn: duckdb.DuckDBPyConnection, tp: TablePlan, chunk_rows: int) -> Iterator[pa.Table]:
    select = ", ".join(f'"{c}"' for c in tp.columns)
    reader = conn.sql(f'SELECT {select} FROM "{tp.table.name}"').to_arrow_reader(chunk_rows)
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in reader:  # DuckDB's batches may be smaller than asked: regroup to chunk_rows
        pending.append(batch)
        count += batch.num_rows
        while count >= chunk_rows:
            rows = pa.Table.from_batches(pending)
            yield rows.slice(0, chunk_rows).combine_chunks()
            rest = rows.slice(chunk_rows)
            pending, count = rest.to_batches(), rest.num_rows
    if count:
        yield pa.Table.from_batches(pending).combine_chunks()


def _versioned(rows: pa.Table, table: Table) -> pa.Table:
    """Runs and the derived tables carry a `revision` (and an `is_deleted` flag) DuckDB does not have:
    copied rows get revision 1, below any a live node writes, so a node rebuilding the trace wins."""
    if table.version == "revision" and "revision" not in rows.column_names:
        rows = rows.append_column("revision", pa.array([MIGRATED_REVISION] * rows.num_rows, pa.uint64()))
    if "is_deleted" in table.column_names and "is_deleted" not in rows.column_names:
        rows = rows.append_column("is_deleted", pa.array([0] * rows.num_rows, pa.uint8()))
    return rows


def _traces(rows: pa.Table) -> list[tuple[str, str]]:
    return sorted(set(zip(rows.column("project").to_pylist(), rows.column("trace_id").to_pylist(), strict=True)))


def copy_table(
    conn: duckdb.DuckDBPyConnection, transport: Transport, database: str, tp: TablePlan, progress: ResumeFile,
    chunk_rows: int, advance: Callable[[int], None],
) -> TableResult:
    done = progress.done.get(tp.table.name, 0)
    before = stored_rows(transport, database, tp.table)
    chunks = 0
    for index, rows in enumerate(_chunks(conn, tp, chunk_rows)):
        chunks, read = index + 1, rows.num_rows
        if index < done:
            advance(read)
            continue
        token = _token(tp.table, rows)
        if tp.table is SPANS:
            rows = load.new_spans(rows, load.stored_span_keys(transport, database, _traces(rows)))
            search_load.load_docs(transport, database, rows, token)  # searchable once copied, as on load
        rows = _versioned(rows, tp.table)
        load.insert(transport, database, tp.table, _no_null_lists(rows, tp.table), token)
        progress.mark(tp.table.name, chunks)
        advance(read)
    # what ClickHouse kept, not what was sent: an insert whose token it has seen adds nothing
    inserted = stored_rows(transport, database, tp.table) - before
    return TableResult(tp.table.name, tp.rows, inserted, chunks, min(done, chunks))


def stored_rows(transport: Transport, database: str, table: Table) -> int:
    """Rows in the ClickHouse table, versions not yet merged included (count() reads part metadata)."""
    name = "`" + database.replace("`", "``") + "`.`" + table.name + "`"
    return int(transport.query_arrow(f"SELECT count() FROM {name}").column(0)[0].as_py())


def open_target(target: Target, cluster: str | None, retention_days: int) -> Transport:
    """Connect and create/migrate the ClickHouse schema as a node does at startup, with the TTL of the
    deployment's `retention_days` (the nodes' setting: a copy must not change their retention)."""
    transport = open_transport(target.url, target.user, target.password, target.database)
    try:
        migrate(transport, target.database, cluster, retention_days)
    except BaseException:
        transport.close()
        raise
    return transport
