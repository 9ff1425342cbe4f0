"""The official OTel Python OTLP log exporters (HTTP protobuf plain/gzip/deflate, gRPC plain/gzip) get
SUCCESS from `POST /v1/logs` and `LogsService/Export`, and their records land in `log_records` under
the key's project; OTLP/JSON works too, with bad ids answered in `partial_success`; no key, a
read-only key, a bad body or an unknown coding fail the way the traces endpoint does."""

from __future__ import annotations

import base64
import gzip
import json

import grpc
import httpx
import pytest
from google.protobuf import json_format
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.sdk._logs.export import LogRecordExportResult

from ingest.config import ApiKey
from tests.ingest.api.harness import BACKENDS
from tests.support.genai_logs import chat_with_events, encode_logs

KEY = "log-exporter-key-0123456789abcdef"
READ_KEY = "log-reader-key-0123456789abcdef"


@pytest.fixture(params=BACKENDS)
def keyed_server(start_ingest_server, request):
    """The same receiver over each storage backend."""
    return start_ingest_server(
        api_keys=[
            ApiKey(key=KEY, project="exporters", scopes=["ingest", "read"]),
            ApiKey(key=READ_KEY, project="exporters", scopes=["read"]),
        ],
        store=request.param,
    )


def _stored(server, trace_hex: str) -> list[tuple[str, str | None, str | None]]:
    assert server.store.wait_loaded(10)
    with server.store.read() as cur:
        return cur.execute(
            "SELECT project, span_id, event_name FROM log_records WHERE trace_id = ? ORDER BY event_name",
            [trace_hex],
        ).fetchall()


def _expected(chat) -> list[tuple[str, str, str]]:
    names = sorted(r.log_record.event_name for r in chat.logs)
    return [("exporters", chat.chat_span_hex, n) for n in names]


@pytest.mark.parametrize("compression", [HttpCompression.NoCompression, HttpCompression.Gzip, HttpCompression.Deflate])
def test_http_log_exporter_gets_success(keyed_server, compression) -> None:
    chat = chat_with_events()
    exporter = HttpLogExporter(
        endpoint=keyed_server.http_url + "/v1/logs", headers={"authorization": f"Bearer {KEY}"},
        compression=compression, timeout=10,
    )
    try:
        assert exporter.export(chat.logs) is LogRecordExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert _stored(keyed_server, chat.trace_hex) == _expected(chat)
    assert keyed_server.store.stats().logs_stored == 4


@pytest.mark.parametrize("gzip_on", [False, True])
def test_grpc_log_exporter_gets_success(keyed_server, gzip_on: bool) -> None:
    from grpc import Compression

    chat = chat_with_events()
    exporter = GrpcLogExporter(
        endpoint=keyed_server.grpc_target, insecure=True, headers={"x-api-key": KEY},
        compression=Compression.Gzip if gzip_on else Compression.NoCompression, timeout=10,
    )
    try:
        assert exporter.export(chat.logs) is LogRecordExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert _stored(keyed_server, chat.trace_hex) == _expected(chat)


def test_log_exporters_without_an_ingest_key_fail_and_store_nothing(keyed_server) -> None:
    chat = chat_with_events(evaluation=False)
    http = HttpLogExporter(endpoint=keyed_server.http_url + "/v1/logs", timeout=5)
    reader = HttpLogExporter(
        endpoint=keyed_server.http_url + "/v1/logs", headers={"authorization": f"Bearer {READ_KEY}"}, timeout=5
    )
    grpc_exp = GrpcLogExporter(endpoint=keyed_server.grpc_target, insecure=True, timeout=5)
    try:
        assert http.export(chat.logs) is LogRecordExportResult.FAILURE
        assert reader.export(chat.logs) is LogRecordExportResult.FAILURE
        assert grpc_exp.export(chat.logs) is LogRecordExportResult.FAILURE
    finally:
        http.shutdown()
        reader.shutdown()
        grpc_exp.shutdown()
    assert _stored(keyed_server, chat.trace_hex) == []
    headers = {"authorization": f"Bearer {READ_KEY}", "content-type": "application/x-protobuf"}
    answer = httpx.post(keyed_server.http_url + "/v1/logs", content=b"", headers=headers)
    assert answer.status_code == 403


def _otlp_json(chat) -> dict:
    doc = json_format.MessageToDict(encode_logs(chat.logs), use_integers_for_enums=True)
    for rl in doc["resourceLogs"]:
        for sl in rl["scopeLogs"]:
            for record in sl["logRecords"]:
                for key in ("traceId", "spanId"):
                    record[key] = base64.b64decode(record[key]).hex()
    return doc


def test_otlp_json_logs_stored_and_bad_ids_rejected_per_record(keyed_server) -> None:
    chat = chat_with_events()
    doc = _otlp_json(chat)
    records = doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    records[0]["spanId"] = "not-hex"  # rejected: cannot key it to a span
    records[1]["traceId"] = "abcd"  # rejected: 2 bytes is no trace id
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json", "content-encoding": "gzip"}
    answer = httpx.post(keyed_server.http_url + "/v1/logs", content=gzip.compress(json.dumps(doc).encode()),
                        headers=headers)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["partialSuccess"]["rejectedLogRecords"] == "2"
    assert "log record(s)" in body["partialSuccess"]["errorMessage"]
    assert "invalid_span_id" in body["partialSuccess"]["errorMessage"]
    assert "invalid_trace_id" in body["partialSuccess"]["errorMessage"]
    stored = _stored(keyed_server, chat.trace_hex)
    assert len(stored) == 2 and {s[1] for s in stored} == {chat.chat_span_hex}


def test_bad_bodies_get_the_traces_error_answers(keyed_server) -> None:
    url = keyed_server.http_url + "/v1/logs"
    auth = {"authorization": f"Bearer {KEY}"}
    broken = httpx.post(url, content=b"\xff\xff\xff", headers={**auth, "content-type": "application/x-protobuf"})
    assert broken.status_code == 400
    assert Status.FromString(broken.content).code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert "ExportLogsServiceRequest" in Status.FromString(broken.content).message
    assert httpx.post(url, content=b"{}", headers={**auth, "content-type": "text/plain"}).status_code == 415
    coded = {**auth, "content-type": "application/json", "content-encoding": "br"}
    assert httpx.post(url, content=b"{}", headers=coded).status_code == 415
    bomb = gzip.compress(b"\x00" * (keyed_server.settings.max_body_bytes + 1))
    big = {**auth, "content-type": "application/x-protobuf", "content-encoding": "gzip"}
    assert httpx.post(url, content=bomb, headers=big).status_code == 413
    empty = httpx.post(url, content=b"{}", headers={**auth, "content-type": "application/json"})
    assert empty.status_code == 200 and "partialSuccess" not in empty.json()
