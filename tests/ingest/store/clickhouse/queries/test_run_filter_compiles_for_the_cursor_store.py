"""A runs filter compiled for a read (ingest/api/run_filter.py, used by /api/sessions and /api/graph)
is written in the SQL of the store the read runs on, told by its cursor when the caller does not say:
on a ClickHouse cursor it is ClickHouse SQL that runs there and selects the runs it means; on DuckDB's
it is DuckDB's, unchanged."""

from __future__ import annotations

from ingest.api.run_filter import run_filter_sql
from ingest.filters.parse import parse_filter
from ingest.search.index import SearchIndex
from tests.ingest.store.otlp_build import agent_run, request

TEXT = 'agent = "nobody" or span.operation = "tool"'


def test_filter_on_a_clickhouse_read_is_clickhouse_sql(open_ch_store, tmp_path) -> None:
    store = open_ch_store()
    root, children = agent_run(steps=2)
    other, other_children = agent_run(steps=1)
    store.submit_blocking("default", request([root, *children, other]))  # `other`: a run without its tool spans
    assert store.wait_loaded(30)
    index = SearchIndex(tmp_path / "unused.search")
    try:
        with store.read() as cur, run_filter_sql(cur, index, parse_filter(TEXT), TEXT, None, None) as extra:
            assert extra is not None and extra.dialect == "clickhouse"
            assert "IN (SELECT s.project, s.trace_id FROM spans s" in extra.sql
            cur.execute(f"SELECT trace_id FROM runs WHERE {extra.sql}", extra.params)
            assert [r[0] for r in cur.fetchall()] == [root.trace_id]
    finally:
        index.close()


def test_filter_on_a_duckdb_read_is_duckdb_sql(tmp_path) -> None:
    import duckdb

    conn = duckdb.connect()
    index = SearchIndex(tmp_path / "unused.search")
    try:
        with run_filter_sql(conn, index, parse_filter(TEXT), TEXT, None, None) as extra:
            assert extra is not None and extra.dialect == "duckdb"
            assert "EXISTS (SELECT 1 FROM spans s" in extra.sql
    finally:
        index.close()
        conn.close()
