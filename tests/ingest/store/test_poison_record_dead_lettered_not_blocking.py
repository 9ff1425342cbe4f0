"""A record the normalizer or DuckDB cannot take is set aside (dead-letter file, counted, logged);
it never blocks the records behind it and is not replayed forever after a restart."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pyarrow as pa
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.normalize import spans_table
from ingest.store.spool import encode_record
from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


def normalizer(project: str, req: ExportTraceServiceRequest, ingested_at: datetime) -> pa.Table:
    if project == "explodes":
        raise ValueError("normalizer bug")
    table = spans_table(project, req, ingested_at)
    if project == "null-name":  # a row DuckDB refuses (NOT NULL column), as a buggy normalizer might give
        table = table.set_column(table.schema.get_field_index("name"), "name", pa.nulls(table.num_rows, pa.string()))
    return table


async def test_poison_records_set_aside_others_loaded(open_store, make_settings) -> None:
    store = open_store(store_kwargs={"normalizer": normalizer}, commit_interval_ms=50)
    good = [agent_run(steps=1) for _ in range(3)]
    bad_norm, bad_norm_kids = agent_run(steps=1)
    bad_db, bad_db_kids = agent_run(steps=1)
    # All in one commit window, so they land in one load batch with the poison in the middle.
    await asyncio.gather(
        store.submit("p", request([good[0][0], *good[0][1]])),
        store.submit("explodes", request([bad_norm, *bad_norm_kids])),
        store.submit("p", request([good[1][0], *good[1][1]])),
        store.submit("null-name", request([bad_db, *bad_db_kids])),
        store.submit("p", request([good[2][0], *good[2][1]])),
    )
    assert store.wait_loaded(10)
    with store.read() as cur:
        stored = dict(cur.execute("SELECT trace_id, count(*) FROM spans GROUP BY trace_id").fetchall())
    assert stored == {r.trace_id: 4 for r, _ in good}
    stats = store.stats()
    assert stats.records_dead_lettered == 2 and stats.spans_dead_lettered == 8
    assert store.metrics.spans_rejected.labels(reason="load_failed")._value.get() == 8
    assert stats.queue_bytes == 0

    dead = make_settings().spool_path / "dead"
    reasons = sorted(p.read_text() for p in dead.glob("*.txt"))
    assert len(reasons) == 2 and "normalizer bug" in "".join(reasons)
    records = {p.read_bytes() for p in dead.glob("*.rec")}
    # The raw records are kept in spool framing, so nothing acknowledged is silently gone.
    assert records == {
        encode_record("explodes", request([bad_norm, *bad_norm_kids]).SerializeToString()),
        encode_record("null-name", request([bad_db, *bad_db_kids]).SerializeToString()),
    }
    store.stop()

    store = open_store(store_kwargs={"normalizer": normalizer})
    assert store.stats().replayed_records == 0  # the mark moved past the poison
    assert store.stats().records_dead_lettered == 0
