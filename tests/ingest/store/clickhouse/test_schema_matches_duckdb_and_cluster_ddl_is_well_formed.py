"""The ClickHouse schema: created (and migrated again as a no-op) on chDB with DuckDB's columns for
every table the read side shares; TTL follows retention_days; the cluster DDL (ON CLUSTER,
Replicated*, Distributed) is accepted by ClickHouse's own parser (formatQuery on chDB). The
cluster DDL is only generated and parsed here: no cluster runs in the tests."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from ingest.store.clickhouse.migrate import migrate
from ingest.store.clickhouse.schema import SCHEMA_MIGRATIONS, TABLES, create_table, migrations, set_ttl
from ingest.store.clickhouse.schema_search import SEARCH_TABLES, search_migration
from ingest.store.clickhouse.schema_work import (
    CLICKHOUSE_ONLY_COLUMNS,
    CLICKHOUSE_ONLY_TABLES,
    work_migration,
)
from ingest.store.clickhouse.transport import ChdbTransport
from ingest.store.migrate import migrate as migrate_duckdb


@pytest.fixture
def chdb(tmp_path: Path):
    transport = ChdbTransport(str(tmp_path / "ch"))
    yield transport
    transport.close()


def _columns(transport: ChdbTransport, table: str) -> list[str]:
    rows = transport.query_arrow(
        "SELECT name FROM system.columns WHERE database = 'steplens' AND table = {t:String} ORDER BY position",
        {"t": table},
    )
    return rows.column(0).to_pylist()


def test_tables_have_duckdbs_columns_and_migrating_twice_is_a_no_op(chdb: ChdbTransport) -> None:
    assert migrate(chdb, "steplens") == len(migrations("steplens"))
    assert migrate(chdb, "steplens") == len(migrations("steplens"))
    versions = chdb.query_arrow("SELECT version FROM steplens.schema_migrations ORDER BY version").column(0).to_pylist()
    assert versions == list(range(1, len(migrations("steplens")) + 1))  # each applied once
    duck = duckdb.connect()
    migrate_duckdb(duck)
    for table in TABLES:
        if table in SEARCH_TABLES:
            continue  # ClickHouse's own: DuckDB keeps full-text search in its FTS5 sidecar file
        if table.name in CLICKHOUSE_ONLY_TABLES:
            assert _columns(chdb, table.name) == table.column_names, table.name
            continue
        expected = [r[0] for r in duck.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
            [table.name],
        ).fetchall()]  # fmt: skip
        versioned = table.per_trace_key or "is_deleted" in table.column_names
        extra = ["revision"] if table.name in ("runs", "alert_state") else (
            ["revision", "is_deleted"] if versioned else [])
        if table.name == "saved_views":
            extra = ["is_deleted"]  # a delete is a tombstone row (schema_views.py)
        own = CLICKHOUSE_ONLY_COLUMNS.get(table.name, ())
        assert [c for c in _columns(chdb, table.name) if c not in own] == expected + extra, table.name


def test_ttl_follows_retention_days(chdb: ChdbTransport) -> None:
    migrate(chdb, "steplens", retention_days=30)
    create = chdb.query_arrow("SHOW CREATE TABLE steplens.spans").column(0)[0].as_py()
    assert "TTL toDateTime(start_time) + toIntervalDay(30)" in create
    migrate(chdb, "steplens", retention_days=0)
    assert "TTL" not in chdb.query_arrow("SHOW CREATE TABLE steplens.spans").column(0)[0].as_py()


def test_cluster_ddl_is_accepted_by_the_clickhouse_parser(chdb: ChdbTransport) -> None:
    statements = [*migrations("steplens", "prod")[0], *create_table(SCHEMA_MIGRATIONS, "steplens", "prod")]
    statements += search_migration("steplens", "prod")
    statements += work_migration("steplens", "prod")  # the services' own tables (schema_work.py)
    statements += [s for t in TABLES if (s := set_ttl(t, "steplens", "prod", 7)) is not None]
    for statement in statements:
        formatted = chdb.query_arrow("SELECT formatQuery({q:String})", {"q": statement}).column(0)[0].as_py()
        assert "ON CLUSTER prod" in formatted, formatted
    statements += migrations("steplens", "prod")[1]
    views = migrations("steplens", "prod")[2]
    assert [v.split(" ON CLUSTER")[0] for v in views] == [
        "ALTER TABLE `steplens`.`saved_views_local`", "ALTER TABLE `steplens`.`saved_views`"
    ]  # the replicated table and the Distributed one over it
    for statement in views:
        formatted = chdb.query_arrow("SELECT formatQuery({q:String})", {"q": statement}).column(0)[0].as_py()
        assert "ON CLUSTER prod" in formatted and "ADD COLUMN IF NOT EXISTS `is_deleted` UInt8" in formatted, formatted
    spans_local, spans = migrations("steplens", "prod")[0][:2]
    assert "ReplicatedReplacingMergeTree(" in spans_local and "ORDER BY (project, trace_id, span_id)" in spans_local
    assert "ENGINE = Distributed(`prod`, `steplens`, `spans_local`, cityHash64(trace_id))" in spans
    with pytest.raises(Exception, match="Syntax error"):  # the parser does refuse broken DDL
        chdb.query_arrow("SELECT formatQuery({q:String})", {"q": spans_local.replace("ORDER BY (", "ORDER BY ((")})
