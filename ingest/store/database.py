"""Opening the server's DuckDB database: one place for how it is attached and configured.

Why ATTACH instead of `duckdb.connect(path)`: the row group size is an option of ATTACH only. The
server writes row groups of `duckdb_row_group_size` rows (30,720) instead of DuckDB's 122,880,
because a checkpoint rewrites the partly filled row group it left last time: measured on 2 cores
(docs/benchmarks.md), checkpoints of ~30k new spans take a steady 0.12-0.19 s with 30,720-row
groups, against 0.07-1.8 s (a spike whenever a 122,880-row group fills) with the default, and the
whole checkpoint work is about 4x smaller. Every load waits for a checkpoint, so the spikes were
what held spans back from being queryable. The database file stays an ordinary DuckDB file that
any client can open.

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
