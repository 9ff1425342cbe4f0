"""The captured body of the official OpenAI instrumentation must give exactly the facts its README
lists (shared/fixtures/README.md), stored in a real DuckDB spans table."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.normalize import SPANS_SCHEMA, spans_table
from ingest.store.migrate import migrate

FIXTURE = "otel-genai-openai/traces-001.bin"


@pytest.fixture(scope="module")
def con(shared_dir):
    path = shared_dir / "fixtures" / FIXTURE
    if not path.exists():
        pytest.skip(f"shared fixture {path} is absent (expected <repo>/../shared)")
    request = ExportTraceServiceRequest()
    request.ParseFromString(path.read_bytes())
    table = spans_table("fixture", request, datetime(2026, 11, 30, tzinfo=UTC))
    assert table.schema.equals(SPANS_SCHEMA)
    connection = duckdb.connect()
    migrate(connection)  # the spans table as the server has it, analytics columns included
    connection.register("batch", table)
    connection.execute("INSERT INTO spans SELECT * FROM batch")
    yield connection
    connection.close()


def one(con, sql: str):
    return con.execute(sql).fetchone()


def test_span_trace_and_root_counts(con):
    assert one(
        con, "SELECT count(*), count(DISTINCT trace_id), count(*) FILTER (parent_span_id IS NULL) FROM spans"
    ) == (
        7,
        2,
        2,
    )


def test_llm_spans_models_and_tokens(con):
    assert one(
        con, "SELECT count(*), count(*) FILTER (status = 'ERROR') FROM spans WHERE operation = 'llm'"
    ) == (4, 1)
    models = {
        r[0] for r in con.execute("SELECT DISTINCT model FROM spans WHERE operation = 'llm'").fetchall()
    }
    assert models == {"gpt-4.1-mini", "gpt-4o-mini"}
    responses = con.execute(
        "SELECT DISTINCT response_model FROM spans WHERE response_model IS NOT NULL"
    ).fetchall()
    assert responses == [("gpt-4o-mini-2024-07-18",)]
    assert one(con, "SELECT sum(input_tokens), sum(output_tokens) FROM spans WHERE operation = 'llm'") == (
        117,
        47,
    )
    # tokens only on llm spans (the agent span carries none)
    assert one(con, "SELECT count(*) FROM spans WHERE operation <> 'llm' AND input_tokens IS NOT NULL") == (
        0,
    )
    assert one(con, "SELECT DISTINCT provider FROM spans WHERE operation = 'llm'") == ("openai",)


def test_failed_llm_call_has_a_readable_error_type_and_no_cost(con):
    row = one(
        con, "SELECT model, error_type, cost_usd FROM spans WHERE operation = 'llm' AND status = 'ERROR'"
    )
    assert row == ("gpt-4.1-mini", "openai.InternalServerError", None)


def test_successful_llm_calls_are_priced_from_the_table(con):
    rows = con.execute(
        "SELECT input_tokens, output_tokens, cost_usd, cost_source FROM spans WHERE operation = 'llm' AND status <> 'ERROR'"
    ).fetchall()
    assert len(rows) == 3
    for inp, out, cost, source in rows:  # gpt-4o-mini list price 0.15 / 0.60 per Mtok
        assert source == "price_table"
        assert cost == pytest.approx((inp * 0.15 + out * 0.60) / 1e6)


def test_tools_and_agent(con):
    tools = con.execute(
        "SELECT tool_name, status, error_type FROM spans WHERE operation = 'tool' ORDER BY tool_name"
    )
    assert tools.fetchall() == [("get_time", "ERROR", "RuntimeError"), ("get_weather", "UNSET", None)]
    assert con.execute("SELECT agent_name FROM spans WHERE operation = 'agent'").fetchall() == [
        ("weather_agent",)
    ]
    assert one(con, "SELECT count(*) FROM spans WHERE status = 'ERROR'") == (2,)


def test_resource_scope_kind_and_json_columns(con):
    row = one(
        con,
        "SELECT service, environment, scope, kind, attributes->>'$.\"gen_ai.tool.call.arguments\"', "
        "resource->>'$.\"service.name\"' FROM spans WHERE tool_name = 'get_weather'",
    )
    assert row == (
        "heldout-openai-v2-span-content",
        "heldout-fixtures",
        "opentelemetry.util.genai.handler",
        "INTERNAL",
        '{"city":"Paris"}',
        "heldout-openai-v2-span-content",
    )
    assert one(con, "SELECT count(*) FROM spans WHERE kind = 'CLIENT'") == (4,)
    # content captured as JSON strings stays exactly as sent
    msgs = one(
        con,
        "SELECT attributes->>'$.\"gen_ai.output.messages\"' FROM spans WHERE tool_name IS NULL AND "
        "operation = 'llm' AND output_tokens = 17",
    )[0]
    assert '"get_weather"' in msgs


def test_ids_and_times(con):
    for trace_id, span_id, parent, start, end, dur in con.execute(
        "SELECT trace_id, span_id, parent_span_id, start_time, end_time, duration_ms FROM spans"
    ).fetchall():
        assert len(trace_id) == 32 and trace_id == trace_id.lower()
        assert len(span_id) == 16 and (parent is None or len(parent) == 16)
        assert end >= start and dur == pytest.approx((end - start).total_seconds() * 1000, abs=0.002)
