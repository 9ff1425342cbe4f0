"""Opening the server's DuckDB database: one place for how it is attached and configured.

Why ATTACH instead of `duckdb.connect(path)`: the row group size is an option of ATTACH only. The
server writes row groups of `duckdb_row_group_size` rows (16,384) instead of DuckDB's 122,880,
because a checkpoint rewrites the partly filled row group it left last time, and every load waits
for a checkpoint. Measured (docs/benchmarks.md): with the default, checkpoints every ~31k new spans
took 0.07-1.8 s in isolation (a spike whenever a 122,880-row group filled) and up to 2.9 s under
full ingest load on 2 cores; with 30,720-row groups a steady 0.12-0.19 s in isolation and 0.4-0.7 s
under load; with 16,384-row groups (the writer checkpoints once per row group of new spans)
0.2-0.35 s under load, and spans are queryable within 0.5-0.6 s of their ack at half the peak
rate. Queries at 10M spans are not slower with the small row groups. The database file stays an
ordinary DuckDB file that any client can open.

Connections made with `cursor()` start in DuckDB's in-memory catalog; `cursor(conn)` here points
them at the attached database, so SQL elsewhere stays unqualified.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ingest.config import Settings

ALIAS = "steplens"


def _quoted(path: Path) -> str:
    """A path as an SQL string literal (ATTACH takes no parameters; the path comes from config)."""
    return "'" + str(path).replace("'", "''") + "'"


def open_database(path: Path, settings: Settings | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection whose default database is the steplens file at `path`, as the server opens it."""
    settings = settings or Settings()
    conn = duckdb.connect(":memory:", config=settings.duckdb_config)
    try:
        options = ["READ_ONLY"] if read_only else [f"ROW_GROUP_SIZE {int(settings.duckdb_row_group_size)}"]
        conn.execute(f"ATTACH {_quoted(path)} AS {ALIAS} ({', '.join(options)})")
        conn.execute(f"USE {ALIAS}")
    except BaseException:
        conn.close()
        raise
    return conn


def cursor(conn: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A new connection to the same database instance, defaulting to the steplens database."""
    cur = conn.cursor()
    cur.execute(f"USE {ALIAS}")
    return cur
