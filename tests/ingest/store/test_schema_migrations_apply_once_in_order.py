"""An older database is upgraded at start, each migration exactly once, recorded as index + 1.

DuckDB only: DuckDB's migrations (ClickHouse's schema:
tests/ingest/store/clickhouse/test_schema_matches_duckdb_and_cluster_ddl_is_well_formed.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb

from ingest.schema import MIGRATIONS, MIGRATIONS_DDL
from ingest.store.migrate import migrate
from tests.ingest.store.otlp_build import agent_run, request


async def test_version_1_database_upgraded_and_kept(make_settings, open_store) -> None:
    db = make_settings().db
    conn = duckdb.connect(str(db))  # a database written by the first release: migration 1 only
    conn.execute(MIGRATIONS_DDL)
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("INSERT INTO schema_migrations VALUES (1, ?)", [datetime.now(UTC).replace(tzinfo=None)])
    conn.execute(
        "INSERT INTO runs (project, trace_id, agent, updated_at) VALUES ('p', 'old-trace', 'a', now()::TIMESTAMP)"
    )
    conn.close()

    store = open_store()
    root, kids = agent_run(steps=1)
    await store.submit("p", request([root, *kids]))
    assert store.wait_loaded(10)
    with store.read() as cur:
        versions = [v for (v,) in cur.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()]
        old = cur.execute("SELECT agent, root_kind FROM runs WHERE trace_id = 'old-trace'").fetchall()
        new = cur.execute("SELECT root_kind FROM runs WHERE trace_id = ?", [root.trace_id]).fetchall()
    assert versions == list(range(1, len(MIGRATIONS) + 1))
    assert old == [("a", None)]  # existing rows survive, new columns NULL
    assert new == [("agent",)]
    store.stop()

    conn = duckdb.connect(str(db))
    assert migrate(conn) == len(MIGRATIONS)  # nothing left to apply
    assert conn.execute("SELECT count(*) FROM schema_migrations").fetchall() == [(len(MIGRATIONS),)]
    conn.close()
