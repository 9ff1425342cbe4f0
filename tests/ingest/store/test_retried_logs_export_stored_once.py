"""A logs export retried (after a lost answer, a 503, a restart) is stored once: log records have no
id, so the store keys them by content; that must hold within one load batch, across batches,
across a restart, and for records the client sent without any timestamp."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.sdk._logs.export import LogRecordExportResult

from tests.ingest.api.harness import BACKENDS
from tests.support.genai_logs import chat_with_events, encode_logs


def _count(store, trace_hex: str) -> int:
    assert store.wait_loaded(10)
    with store.read() as cur:
        return cur.execute("SELECT count(*) FROM log_records WHERE trace_id = ?", [trace_hex]).fetchone()[0]


def test_same_export_sent_twice_by_the_sdk_exporter_stored_once(ingest_server) -> None:
    chat = chat_with_events()
    exporter = OTLPLogExporter(endpoint=ingest_server.http_url + "/v1/logs", timeout=10)
    try:
        assert exporter.export(chat.logs) is LogRecordExportResult.SUCCESS
        assert _count(ingest_server.store, chat.trace_hex) == 4
        assert exporter.export(chat.logs) is LogRecordExportResult.SUCCESS  # the retry
    finally:
        exporter.shutdown()
    assert _count(ingest_server.store, chat.trace_hex) == 4
    stats = ingest_server.store.stats()
    assert (stats.logs_stored, stats.logs_deduplicated) == (4, 4)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_retries_in_one_batch_and_after_a_restart_stored_once(open_store) -> None:
    chat = chat_with_events()
    request = encode_logs(chat.logs)
    store = open_store(commit_interval_ms=50)  # both copies share one fsync group and one load
    await asyncio.gather(store.submit_logs("p", request), store.submit_logs("p", request))
    assert _count(store, chat.trace_hex) == 4
    store.stop()

    store = open_store()
    await store.submit_logs("p", request)
    assert _count(store, chat.trace_hex) == 4
    await store.submit_logs("other", request)  # another project's copy is its own
    assert _count(store, chat.trace_hex) == 8


@pytest.mark.parametrize("backend", BACKENDS)
async def test_records_without_timestamps_retried_stored_once(open_store) -> None:
    chat = chat_with_events(evaluation=False)
    request = encode_logs(chat.logs)
    for rl in request.resource_logs:
        for sl in rl.scope_logs:
            for record in sl.log_records:
                record.time_unix_nano = 0
                record.observed_time_unix_nano = 0
    store = open_store()
    await store.submit_logs("p", ExportLogsServiceRequest.FromString(request.SerializeToString()))
    assert _count(store, chat.trace_hex) == 3
    await asyncio.sleep(0.01)  # the retry's ingest time differs
    await store.submit_logs("p", request)
    assert _count(store, chat.trace_hex) == 3
