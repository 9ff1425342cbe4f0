"""Create and migrate the ClickHouse schema at startup, then set each table's TTL to `retention_days`.

Why versions here too: later migrations may transform data exactly once; `schema_migrations`
says which ran. Every statement is idempotent (IF NOT EXISTS), so two nodes starting together
converge; the TTL is re-applied at every start so a changed `retention_days` takes effect.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pyarrow as pa

from ingest.store.clickhouse.schema import (
    SCHEMA_MIGRATIONS,
    TABLES,
    create_database,
    create_table,
    migrations,
    set_ttl,
)
from ingest.store.clickhouse.transport import Transport

log = logging.getLogger(__name__)


def current_version(transport: Transport, database: str) -> int:
    table = transport.query_arrow(f"SELECT max(version) FROM `{database}`.`schema_migrations`")
    value = table.column(0)[0].as_py() if table.num_rows else None
    return int(value or 0)


def migrate(transport: Transport, database: str, cluster: str | None = None, retention_days: int = 0) -> int:
    """Bring the schema up to date; returns the resulting version."""
    transport.command(create_database(database, cluster))
    for statement in create_table(SCHEMA_MIGRATIONS, database, cluster):
        transport.command(statement)
    version = current_version(transport, database)
    steps = migrations(database, cluster)
    for index in range(version, len(steps)):
        for statement in steps[index]:
            transport.command(statement)
        row = pa.table({"version": pa.array([index + 1], pa.int32()),
                        "applied_at": pa.array([datetime.now(UTC).replace(tzinfo=None)], pa.timestamp("us"))})
        transport.insert_arrow(f"`{database}`.`schema_migrations`", row)
        log.info("applied ClickHouse schema migration %d", index + 1)
    for table in TABLES:
        statement = set_ttl(table, database, cluster, retention_days)
        if statement is None:
            continue
        try:
            transport.command(statement)
        except Exception as exc:
            if "REMOVE TTL" in statement and "doesn't have any table TTL" in str(exc):
                continue  # already none
            raise
    return max(version, len(steps))
