"""On the ClickHouse store the analytics facts of a trace (tool calls, cost by model) are derived by
the shared rules and kept current: a late span replaces the trace's rows, stored once, and equal what
the DuckDB store derives from the same spans."""

from __future__ import annotations

from tests.ingest.store.otlp_build import agent_run, request


async def test_tool_calls_and_run_models_match_duckdb_after_late_spans(open_ch_store, open_store, tmp_path) -> None:
    ch = open_ch_store(db=tmp_path / "ch" / "steplens.duckdb")  # its own spool beside the DuckDB store's
    duck = open_store()
    root, children = agent_run(steps=3, tool_error_steps=1)
    first, late = children[:4], [root, *children[4:]]
    for store in (ch, duck):
        await store.submit("p", request(first))
        assert store.wait_loaded(20)
        await store.submit("p", request(late))
        assert store.wait_loaded(20)
    tool_sql = "SELECT span_id, tool_name, is_error, agent FROM tool_calls {final} WHERE trace_id = ? ORDER BY span_id"
    models_sql = "SELECT model, llm_calls, input_tokens, output_tokens FROM run_models {final} WHERE trace_id = ?"
    with ch.read() as cur:
        ch_tools = cur.execute(tool_sql.format(final="FINAL"), [root.trace_id]).fetchall()
        ch_models = cur.execute(models_sql.format(final="FINAL"), [root.trace_id]).fetchall()
    with duck.read() as cur:
        duck_tools = cur.execute(tool_sql.format(final=""), [root.trace_id]).fetchall()
        duck_models = cur.execute(models_sql.format(final=""), [root.trace_id]).fetchall()
    assert len(ch_tools) == 3 and ch_tools == duck_tools
    assert {t[3] for t in ch_tools} == {"support_agent"}  # run facts from the late root
    assert ch_models == duck_models == [("gpt-4o-mini", 3, 300, 60)]


def test_a_row_gone_from_the_trace_is_gone_from_reads(tmp_path) -> None:
    from datetime import datetime

    import pyarrow as pa

    from ingest.store.clickhouse.load import replace_trace_rows
    from ingest.store.clickhouse.migrate import migrate
    from ingest.store.clickhouse.schema import RUN_MODELS
    from ingest.store.clickhouse.transport import ChdbTransport

    transport = ChdbTransport(str(tmp_path / "ch"))
    try:
        migrate(transport, "steplens")

        def rows(models: list[str | None]) -> pa.Table:
            n = len(models)
            return pa.table({
                "project": ["p"] * n, "trace_id": ["t1"] * n, "model": models, "provider": ["openai"] * n,
                "start_time": pa.array([datetime(2026, 1, 1)] * n, pa.timestamp("us")),
                "llm_calls": [1] * n, "input_tokens": [10] * n, "output_tokens": [2] * n,
            })  # fmt: skip

        replace_trace_rows(transport, "steplens", RUN_MODELS, rows(["a", None]), [("p", "t1")], 1)
        replace_trace_rows(transport, "steplens", RUN_MODELS, rows(["a"]), [("p", "t1")], 2)
        final = transport.query_arrow("SELECT model FROM run_models FINAL WHERE trace_id = 't1'")
        assert final.column(0).to_pylist() == ["a"]
    finally:
        transport.close()
