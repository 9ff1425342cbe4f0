"""The clickhouse-connect transport against a real ClickHouse server: schema, a deduplicated
insert, typed parameters and the cursor. Runs only when STEPLENS_TEST_CLICKHOUSE_URL names a
server (http://127.0.0.1:8123; user and password from STEPLENS_TEST_CLICKHOUSE_USER/_PASSWORD);
everything else of this backend runs on chDB, the same engine."""

from __future__ import annotations

import os
import uuid
from datetime import datetime

import pytest

from ingest.normalize import spans_table
from ingest.store.clickhouse import load
from ingest.store.clickhouse.cursor import ClickHouseCursor
from ingest.store.clickhouse.migrate import migrate
from ingest.store.clickhouse.transport import HttpTransport
from tests.ingest.store.otlp_build import agent_run, request

URL = os.environ.get("STEPLENS_TEST_CLICKHOUSE_URL")
pytestmark = pytest.mark.skipif(not URL, reason="STEPLENS_TEST_CLICKHOUSE_URL is not set (no ClickHouse server)")


def test_schema_insert_dedup_and_typed_reads_on_a_server() -> None:
    assert URL is not None
    database = f"steplens_test_{uuid.uuid4().hex[:12]}"
    user = os.environ.get("STEPLENS_TEST_CLICKHOUSE_USER", "default")
    password = os.environ.get("STEPLENS_TEST_CLICKHOUSE_PASSWORD", "")
    admin = HttpTransport(URL, user, password, "default")
    try:
        migrate(admin, database, retention_days=0)
        transport = HttpTransport(URL, user, password, database)
        root, children = agent_run(steps=2)
        rows = spans_table("p", request([root, *children]), datetime(2026, 1, 1))
        assert load.load_spans(transport, database, rows, "tok-1")[0] == 7
        load.insert(transport, database, load.SPANS, rows, "tok-1")  # the same token: dropped by the server
        cur = ClickHouseCursor(transport, 10)
        assert cur.execute("SELECT count() FROM spans WHERE trace_id = ?", [root.trace_id]).fetchone() == (7,)
        runs = load.RunDeriver().runs(load.read_spans(transport, database, [("p", root.trace_id)]), datetime(2026, 1, 1))
        load.store_runs(transport, database, runs)
        assert cur.execute("SELECT span_count FROM runs FINAL WHERE trace_id = ?", [root.trace_id]).fetchall() == [(7,)]
        transport.close()
    finally:
        admin.command(f"DROP DATABASE IF EXISTS `{database}`")
        admin.close()
