"""The real Langfuse SDK pointed at `steplens serve` (it posts gzip protobuf to
/api/public/otel/v1/traces with HTTP Basic `public_key:secret_key`) gets its spans stored under the
project of the ingest key it sent as secret key, and its observations come out as LLM calls, tool
calls and agents with their models, tokens, cache and reasoning parts, first-token time and errors.
A wrong Basic password is refused like any unknown key."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ingest.auth import presented_key
from ingest.config import ApiKey
from tests.ingest.api.harness import BACKENDS

langfuse = pytest.importorskip("langfuse")

KEY = "lf-ingest-key-0123456789abcdef"
PATH = "/api/public/otel/v1/traces"


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def keyed_server(start_ingest_server):
    return start_ingest_server(api_keys=[ApiKey(key=KEY, project="lf-project", scopes=["ingest", "read"])])


def _rows(server, trace_hex: str) -> dict[str, dict]:
    assert server.store.wait_loaded(10)
    with server.store.read() as cur:
        result = cur.execute("SELECT * FROM spans WHERE trace_id = ?", [trace_hex])
        columns = [d[0] for d in result.description]
        return {row[columns.index("name")]: dict(zip(columns, row, strict=True)) for row in result.fetchall()}


@pytest.mark.parametrize("backend", BACKENDS)
def test_langfuse_sdk_run_is_stored_and_mapped(keyed_server) -> None:
    client = langfuse.Langfuse(
        # the SDK keeps one client per public key for the process: a key of this server's own, so a
        # second parametrized run never reuses the first run's exporter (aimed at a stopped server)
        public_key=f"pk-lf-{keyed_server.settings.store}-{keyed_server.http_url.rsplit(':', 1)[1]}",
        secret_key=KEY,
        base_url=keyed_server.http_url,
        tracer_provider=TracerProvider(),
        environment="staging",
        release="r-42",
        flush_at=1,
    )
    try:
        with (
            langfuse.propagate_attributes(user_id="u-1", session_id="s-1", trace_name="support-run"),
            client.start_as_current_observation(name="support-agent", as_type="agent", version="2.1") as run,
        ):
            trace_hex = run.trace_id
            with client.start_as_current_observation(
                name="chat",
                as_type="generation",
                model="claude-sonnet-4-5-20250929",
                usage_details={"input": 700, "input_cache_read": 200, "input_cache_creation": 100,
                               "output": 40, "output_reasoning": 10},  # fmt: skip
                completion_start_time=datetime.now(UTC) + timedelta(milliseconds=50),
            ):
                pass
            with client.start_as_current_observation(name="lookup", as_type="tool") as tool:
                tool.update(level="ERROR", status_message="order not found")
            with (
                pytest.raises(RuntimeError),
                client.start_as_current_observation(name="retry", as_type="generation", model="gpt-4o"),
            ):
                raise RuntimeError("upstream 500")
            with client.start_as_current_observation(name="kb", as_type="retriever"):
                pass
            with client.start_as_current_observation(
                name="paid", as_type="generation", model="my-router-model",
                usage_details={"input": 10, "output": 5}, cost_details={"input": 0.001, "output": 0.002},
            ):  # fmt: skip
                pass
        client.flush()
    finally:
        client.shutdown()
    rows = _rows(keyed_server, trace_hex)
    assert {r["project"] for r in rows.values()} == {"lf-project"}  # Basic password = the ingest key
    assert len(rows) == 6

    agent = rows["support-agent"]
    assert (agent["operation"], agent["agent_name"], agent["agent_version"]) == ("agent", "support-agent", "2.1")
    assert (agent["user_id"], agent["conversation_id"], agent["environment"]) == ("u-1", "s-1", "staging")

    chat = rows["chat"]
    assert (chat["operation"], chat["model"]) == ("llm", "claude-sonnet-4-5-20250929")
    # Langfuse's categories are exclusive; the columns follow OTel (totals include their parts).
    assert (chat["input_tokens"], chat["cache_read_tokens"], chat["cache_creation_tokens"]) == (1000, 200, 100)
    assert (chat["output_tokens"], chat["reasoning_tokens"]) == (50, 10)
    assert chat["cost_source"] == "price_table"
    assert chat["cost_usd"] == pytest.approx((700 * 3.0 + 200 * 0.30 + 100 * 3.75 + 50 * 15.0) / 1e6)
    assert 30 < chat["time_to_first_chunk_ms"] < 5_000

    tool = rows["lookup"]
    assert (tool["operation"], tool["tool_name"], tool["status"]) == ("tool", "lookup", "ERROR")
    assert tool["status_message"] == "order not found"
    retry = rows["retry"]
    assert (retry["operation"], retry["status"], retry["error_type"]) == ("llm", "ERROR", "RuntimeError")
    assert rows["kb"]["operation"] == "retrieval"
    paid = rows["paid"]
    assert (paid["cost_usd"], paid["cost_source"]) == (pytest.approx(0.003), "client")


@pytest.mark.parametrize("compression", [Compression.Gzip, Compression.NoCompression])
def test_otlp_exporter_with_basic_auth_on_the_langfuse_path(keyed_server, compression) -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("t").start_as_current_span("basic-auth-span") as span:
        trace_hex = format(span.get_span_context().trace_id, "032x")
    provider.shutdown()
    good = OTLPSpanExporter(
        endpoint=keyed_server.http_url + PATH, headers={"authorization": _basic("pk-lf-1", KEY)},
        compression=compression, timeout=10,
    )  # fmt: skip
    try:
        assert good.export(memory.get_finished_spans()) is SpanExportResult.SUCCESS
    finally:
        good.shutdown()
    assert _rows(keyed_server, trace_hex)["basic-auth-span"]["project"] == "lf-project"


def test_wrong_basic_password_is_refused_and_not_echoed(keyed_server) -> None:
    for header in (_basic("pk-lf-1", "not-the-key"), _basic(KEY, ""), "Basic !!!notbase64"):
        response = httpx.post(
            keyed_server.http_url + PATH, content=b"", headers={"authorization": header,
                                                                "content-type": "application/x-protobuf"},
        )  # fmt: skip
        assert response.status_code == 401, header
        assert "not-the-key" not in response.text and KEY not in response.text


def test_basic_credentials_present_their_password_as_the_key() -> None:
    assert presented_key(_basic("pk-lf-1", " sk-1 "), None) == "sk-1"
    assert presented_key(_basic("pk", "with:colon"), None) == "with:colon"
    assert presented_key(_basic("only-user", ""), "fallback") == "fallback"
    assert presented_key("basic " + base64.b64encode(b"no-colon").decode(), None) is None
    assert presented_key("Bearer k", "x") == "k"
