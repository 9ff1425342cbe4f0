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
        expected = [r[0] for r in duck.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
            [table.name],
        ).fetchall()]  # fmt: skip
        extra = ["revision"] if table.name == "runs" else ["revision", "is_deleted"] if table.per_trace_key else []
        assert _columns(chdb, table.name) == expected + extra, table.name


def test_ttl_follows_retention_days(chdb: ChdbTransport) -> None:
    migrate(chdb, "steplens", retention_days=30)
    create = chdb.query_arrow("SHOW CREATE TABLE steplens.spans").column(0)[0].as_py()
    assert "TTL toDateTime(start_time) + toIntervalDay(30)" in create
    migrate(chdb, "steplens", retention_days=0)
    assert "TTL" not in chdb.query_arrow("SHOW CREATE TABLE steplens.spans").column(0)[0].as_py()


def test_cluster_ddl_is_accepted_by_the_clickhouse_parser(chdb: ChdbTransport) -> None:
    statements = [*migrations("steplens", "prod")[0], *create_table(SCHEMA_MIGRATIONS, "steplens", "prod")]
    statements += search_migration("steplens", "prod")
    statements += [s for t in TABLES if (s := set_ttl(t, "steplens", "prod", 7)) is not None]
    for statement in statements:
        formatted = chdb.query_arrow("SELECT formatQuery({q:String})", {"q": statement}).column(0)[0].as_py()
        assert "ON CLUSTER prod" in formatted, formatted
    statements += migrations("steplens", "prod")[1]
    spans_local, spans = migrations("steplens", "prod")[0][:2]
    assert "ReplicatedReplacingMergeTree(" in spans_local and "ORDER BY (project, trace_id, span_id)" in spans_local
    assert "ENGINE = Distributed(`prod`, `steplens`, `spans_local`, cityHash64(trace_id))" in spans
    with pytest.raises(Exception, match="Syntax error"):  # the parser does refuse broken DDL
        chdb.query_arrow("SELECT formatQuery({q:String})", {"q": spans_local.replace("ORDER BY (", "ORDER BY ((")})
