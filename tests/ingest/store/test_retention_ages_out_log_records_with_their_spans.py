"""Retention deletes log records older than `retention_days` (by the record's own time), in the same
bounded chunks as spans, and keeps the recent ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import new_span_id, new_trace_id, ns
from tracer import conventions as c

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


def _logs(days_ago: list[float]) -> ExportLogsServiceRequest:
    now = datetime.now(UTC)
    request = ExportLogsServiceRequest()
    scope_logs = request.resource_logs.add().scope_logs.add()
    for d in days_ago:
        scope_logs.log_records.add(
            trace_id=bytes.fromhex(new_trace_id()), span_id=bytes.fromhex(new_span_id()),
            time_unix_nano=ns(now - timedelta(days=d)), event_name=c.GEN_AI_EVENT_USER_MESSAGE,
        )
    return request


async def test_sweep_deletes_only_old_log_records_in_chunks(open_store) -> None:
    store = open_store(store_kwargs={"retention_chunk_rows": 2}, retention_days=7)
    await store.submit_logs("p", _logs([30, 20, 10, 8, 9, 1, 0.01]))
    assert store.wait_loaded(10)
    store.sweep_retention(timeout=20)
    with store.read() as cur:
        left = cur.execute("SELECT count(*), min(time) FROM log_records").fetchone()
    assert left[0] == 2
    assert left[1] > datetime.now(UTC).replace(tzinfo=None) - timedelta(days=7)
