"""Apply `ingest.schema.MIGRATIONS` that a database has not seen yet, each in its own transaction.

Why versions rather than re-running idempotent DDL: later migrations may transform data, which
must happen exactly once; the schema_migrations table says which ran (version = index + 1).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import duckdb

from ingest.schema import MIGRATIONS, MIGRATIONS_DDL

log = logging.getLogger(__name__)


def current_version(conn: duckdb.DuckDBPyConnection) -> int:
    row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchall()[0]
    return int(row[0]) if row else 0


def migrate(conn: duckdb.DuckDBPyConnection) -> int:
    """Bring the schema up to date; returns the resulting version."""
    conn.execute(MIGRATIONS_DDL)
    version = current_version(conn)
    for index in range(version, len(MIGRATIONS)):
        conn.execute("BEGIN TRANSACTION")
        try:
            for statement in MIGRATIONS[index]:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations VALUES (?, ?)",
                [index + 1, datetime.now(UTC).replace(tzinfo=None)],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        log.info("applied schema migration %d", index + 1)
    return max(version, len(MIGRATIONS))
