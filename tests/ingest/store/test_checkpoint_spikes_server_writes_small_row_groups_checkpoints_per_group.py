"""With DuckDB's 122,880-row groups, a checkpoint under load rewrote the partly filled row group the
previous one left, and every few checkpoints one took seconds while every load waited. The server
attaches its file with small row groups (duckdb_row_group_size) and checkpoints once per row group of
new spans; the file stays an ordinary DuckDB database.

DuckDB only: row groups and checkpoints are DuckDB's file format."""

from __future__ import annotations

import duckdb

from tests.ingest.store.otlp_build import agent_run, request

ROWS = 2048  # DuckDB's smallest row group, so a test needs only a few thousand spans


async def _store_spans(store, runs: int) -> int:
    for _ in range(runs):
        root, kids = agent_run(steps=40)  # 121 spans per run
        await store.submit("p", request([root, *kids]))
    assert store.wait_loaded(20)
    return runs * 121


async def test_row_groups_have_the_configured_size_and_a_plain_client_reads_them(open_store, make_settings):
    store = open_store(duckdb_row_group_size=ROWS)
    spans = await _store_spans(store, 50)
    store.stop()
    with duckdb.connect(str(make_settings().db), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM spans").fetchone() == (spans,)
        groups = conn.execute(
            "SELECT count(DISTINCT row_group_id), max(count) FROM pragma_storage_info('spans') WHERE column_id = 0"
        ).fetchone()
    assert groups[0] >= spans // ROWS and groups[1] <= ROWS


async def test_writer_checkpoints_under_load_once_per_row_group_of_new_spans(open_store):
    # idle and WAL-size checkpoints out of reach: only the row count can trigger one
    store = open_store(
        duckdb_row_group_size=ROWS, checkpoint_idle_wal_bytes=1 << 40, checkpoint_max_wal_bytes=1 << 40
    )
    spans = await _store_spans(store, 40)
    assert 1 <= store.stats().checkpoints <= spans // ROWS
