"""The query bench's store on ClickHouse (chDB): the DuckDB store of bench/_query_data.py, copied in bulk.

    .venv/bin/python -m bench._ch_query_data --from /tmp/q10m.duckdb --to /tmp/q10m.chdb

Why a bulk copy and not the live loader or `steplens migrate`: both insert in chunks with an
anti-join and a dedup token per chunk (what a live or resumable copy needs), which at 10M spans
measures the copy, not the queries. Here every table ClickHouse has is exported by DuckDB to one
Parquet file (JSON columns as their text, so ClickHouse stores DuckDB's exact JSON, not its own
re-serialization) and inserted with one `INSERT ... SELECT FROM file(...)` per table; runs and the
per-trace derived tables get revision 1 (is_deleted 0), as `steplens migrate` writes them. The
same synthetic data as the DuckDB store, so both stores answer the same questions over the same
rows. Then `OPTIMIZE ... FINAL`: the parts merged, as a store at rest has them after background
merges.

Search documents (`search_docs`): with `--search-index` (the DuckDB store's SQLite sidecar, built by
its server), its documents are copied as they are (ClickHouse reads the SQLite file itself) (the same documents: both stores make them with
`ingest.search.index.span_docs`) and the index is marked built, so a server on the copy does not
rebuild it; without it the copy has none and a server on it rebuilds them from the spans.

One chDB session per process: run it in its own process (this module's CLI), not inside a
process that has another chDB directory open.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingest.clock import utcnow  # noqa: E402
from ingest.search.indexer import META_BUILT_AT  # noqa: E402
from ingest.store.clickhouse.migrate import migrate  # noqa: E402
from ingest.store.clickhouse.schema import TABLES, Table  # noqa: E402
from ingest.store.clickhouse.schema_search import DOC_COLUMNS, SEARCH_DOCS  # noqa: E402
from ingest.store.clickhouse.search_index import write_meta  # noqa: E402
from ingest.store.clickhouse.transport import ChdbTransport  # noqa: E402

DATABASE = "steplens"
# columns the ClickHouse tables have and the DuckDB ones do not: their value for copied rows
_ADDED = {"revision": "1::UBIGINT", "is_deleted": "0::UTINYINT"}


def _duck_columns(conn: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    rows = conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
        [table],
    ).fetchall()
    return {name: data_type for name, data_type in rows}


def _export(conn: duckdb.DuckDBPyConnection, table: Table, have: dict[str, str], out: Path) -> list[str]:
    """COPY `table`'s columns that ClickHouse has to Parquet; returns the columns written."""
    select, names = [], []
    for name, _ch_type in table.columns:
        if name in have:
            expr = f'"{name}"::VARCHAR' if have[name] == "JSON" else f'"{name}"'
            select.append(f'{expr} AS "{name}"')
        elif name in _ADDED:
            select.append(f'{_ADDED[name]} AS "{name}"')
        else:
            continue
        names.append(name)
    conn.execute(f'COPY (SELECT {", ".join(select)} FROM "{table.name}") TO \'{out}\' (FORMAT parquet)')
    return names


def copy_search(transport: ChdbTransport, index: Path) -> int:
    """Copy the DuckDB store's search documents (the sidecar's `docs` rows and their FTS5 text, read
    by ClickHouse's own `sqlite()` table function) into search_docs, and mark the index built."""
    t0 = time.perf_counter()
    quoted = ", ".join(f"`{n}`" for n in DOC_COLUMNS)
    path = str(index).replace("\\", "\\\\").replace("'", "\\'")
    transport.command(
        f"INSERT INTO `{DATABASE}`.`{SEARCH_DOCS.name}` ({quoted}) "
        "SELECT d.project, d.trace_id, d.span_id, d.field, fromUnixTimestamp64Micro(d.start_us, 'UTC'), b.c0, "
        f"now64(6, 'UTC') FROM sqlite('{path}', 'docs') AS d INNER JOIN sqlite('{path}', 'body_content') AS b "
        "ON b.id = d.id"
    )
    transport.command(f"OPTIMIZE TABLE `{DATABASE}`.`{SEARCH_DOCS.name}` FINAL")
    write_meta(transport, DATABASE, {META_BUILT_AT: utcnow().isoformat()})
    docs = transport.query_arrow(f"SELECT count() FROM `{DATABASE}`.`{SEARCH_DOCS.name}`").column(0)[0].as_py()
    print(f"  {SEARCH_DOCS.name:<14} {docs:>12,} rows   copied from {index.name} in {time.perf_counter() - t0:6.1f} s",
          flush=True)  # fmt: skip
    return int(docs)


def build(source: Path, target: Path, workdir: Path | None = None, search_index: Path | None = None) -> dict[str, int]:
    """Copy `source` (a DuckDB store) into a fresh chDB directory `target`; returns rows per table."""
    if target.exists():
        shutil.rmtree(target)
    scratch = Path(tempfile.mkdtemp(prefix="steplens-ch-bench-", dir=workdir))
    conn = duckdb.connect(str(source), read_only=True)
    transport = ChdbTransport(str(target), DATABASE)
    counts: dict[str, int] = {}
    try:
        migrate(transport, DATABASE, None, 0)
        for table in TABLES:
            have = _duck_columns(conn, table.name)
            if not have:
                continue
            t0 = time.perf_counter()
            parquet = scratch / f"{table.name}.parquet"
            names = _export(conn, table, have, parquet)
            exported = time.perf_counter() - t0
            quoted = ", ".join(f"`{n}`" for n in names)
            transport.command(
                f"INSERT INTO `{DATABASE}`.`{table.name}` ({quoted}) SELECT {quoted} FROM file('{parquet}', Parquet)"
            )
            transport.command(f"OPTIMIZE TABLE `{DATABASE}`.`{table.name}` FINAL")
            parquet.unlink()
            rows = transport.query_arrow(f"SELECT count() FROM `{DATABASE}`.`{table.name}`").column(0)[0].as_py()
            counts[table.name] = int(rows)
            print(f"  {table.name:<14} {rows:>12,} rows   export {exported:6.1f} s   "
                  f"insert + merge {time.perf_counter() - t0 - exported:6.1f} s", flush=True)  # fmt: skip
        if search_index is not None:
            counts[SEARCH_DOCS.name] = copy_search(transport, search_index)
    finally:
        transport.close()
        conn.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, required=True, help="the query bench's DuckDB store")
    parser.add_argument("--to", dest="target", type=Path, required=True, help="chDB data directory (replaced)")
    parser.add_argument("--search-index", type=Path, help="the DuckDB store's search sidecar (<db>.search), "
                        "built: its documents are copied into search_docs")
    parser.add_argument("--search-only", action="store_true", help="only (re)copy the search documents into --to")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    if args.search_only:
        transport = ChdbTransport(str(args.target), DATABASE)
        try:
            migrate(transport, DATABASE, None, 0)
            transport.command(f"TRUNCATE TABLE `{DATABASE}`.`{SEARCH_DOCS.name}`")
            copy_search(transport, args.search_index)
        finally:
            transport.close()
        return 0
    counts = build(args.source, args.target, args.target.parent, args.search_index)
    print(f"built {args.target}: {counts.get('spans', 0):,} spans, {counts.get('runs', 0):,} runs "
          f"in {time.perf_counter() - t0:.0f} s", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
