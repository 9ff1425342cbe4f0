"""One trace whose analytics upkeep fails on its own data (here: a tool span whose cost no DECIMAL
takes, written past normalization, so no input clamping can hide the failure) must not freeze the
analytics of every other trace and project: it is set aside with a reason and a count, retried
alone with backoff (no tight loop, no log flood), and stays set aside across a restart while
project A's tool and cost analytics keep updating.

DuckDB only: it drives DuckDB's upkeep pass (ingest/store/upkeep.py) with a value only DuckDB's
DECIMAL refuses."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.normalize import spans_table
from ingest.store import upkeep
from ingest.store.writer import utcnow
from tests.ingest.store.otlp_build import agent_run, request

POISON_COST = 1e308


def normalizer(project: str, req: ExportTraceServiceRequest, ingested_at: datetime) -> pa.Table:
    table = spans_table(project, req, ingested_at)
    if project == "B":
        tool = pc.equal(table["operation"], "tool")
        cost = pc.if_else(tool, pa.scalar(POISON_COST), table["cost_usd"])
        table = table.set_column(table.schema.get_field_index("cost_usd"), "cost_usd", cost)
    return table


def _tool_calls(store, project: str) -> set[str]:
    with store.read() as cur:
        rows = cur.execute("SELECT DISTINCT trace_id FROM tool_calls WHERE project = ?", [project]).fetchall()
    return {r[0] for r in rows}


def _attempts(store, trace_id: str) -> int | None:
    return store.run_write(lambda conn: upkeep.quarantine_attempts(conn, "B", trace_id)).result(10)


async def test_poison_trace_set_aside_project_a_analytics_keep_updating(open_store, caplog) -> None:
    store = open_store(store_kwargs={"normalizer": normalizer})
    a1, a1_kids = agent_run(steps=2)
    await store.submit("A", request([a1, *a1_kids]))
    assert store.wait_loaded(20)
    assert _tool_calls(store, "A") == {a1.trace_id}

    bad, bad_kids = agent_run(steps=2)
    a2, a2_kids = agent_run(steps=2)
    with caplog.at_level(logging.WARNING, logger="ingest.store.writer"):
        await store.submit("B", request([bad, *bad_kids]))
        await store.submit("A", request([a2, *a2_kids]))
        assert store.wait_loaded(20), "analytics never became current: the poison trace blocks every pass"
        assert _tool_calls(store, "A") == {a1.trace_id, a2.trace_id}
        assert _tool_calls(store, "B") == set()
        assert store.stats().upkeep_traces_set_aside == 1
        assert store.metrics.upkeep_traces_isolated.labels(reason="ConversionException")._value.get() == 1
        assert _attempts(store, bad.trace_id) == 1

        # idle for a while: no tight loop, no log flood, no retry before the backoff
        cpu0 = time.process_time()
        time.sleep(3.0)
        cpu = time.process_time() - cpu0
        a3, a3_kids = agent_run(steps=1)
        await store.submit("A", request([a3, *a3_kids]))
        assert store.wait_loaded(20)
    assert _tool_calls(store, "A") == {a1.trace_id, a2.trace_id, a3.trace_id}
    with store.read() as cur:  # cost by model too
        costed = {r[0] for r in cur.execute("SELECT DISTINCT trace_id FROM run_models WHERE project = 'A'").fetchall()}
    assert costed == {a1.trace_id, a2.trace_id, a3.trace_id}
    assert cpu < 1.0, f"{cpu:.2f} s of CPU in 3 s idle"
    lines = [r for r in caplog.records if bad.trace_id in r.getMessage()]
    assert 1 <= len(lines) <= 2, [r.getMessage() for r in lines]
    assert "ConversionException" in lines[0].getMessage()
    assert _attempts(store, bad.trace_id) == 1

    # its backoff passed: retried alone, fails again, waits twice as long
    def retry_later(conn):
        return upkeep.retry_quarantined(conn, utcnow() + timedelta(minutes=2))

    retried = store.run_write(retry_later).result(10)
    assert [(t, n) for t, n, _ in retried] == [(("B", bad.trace_id), 2)]
    with store.read() as cur:
        (wait_s,) = cur.execute(
            "SELECT date_diff('second', ?, next_at) FROM upkeep_quarantine WHERE trace_id = ?",
            [utcnow() + timedelta(minutes=2), bad.trace_id],
        ).fetchall()[0]
    assert 55 <= wait_s <= 65  # 30 s, then 60 s
    store.stop()

    # across a restart: still set aside, A still updating
    store = open_store(store_kwargs={"normalizer": normalizer})
    a4, a4_kids = agent_run(steps=1)
    await store.submit("A", request([a4, *a4_kids]))
    assert store.wait_loaded(20)
    assert a4.trace_id in _tool_calls(store, "A")
    assert store.stats().upkeep_traces_set_aside == 1
    assert _attempts(store, bad.trace_id) == 2


async def test_set_aside_trace_released_once_it_passes(open_store) -> None:
    store = open_store(store_kwargs={"normalizer": normalizer})
    bad, bad_kids = agent_run(steps=1)
    await store.submit("B", request([bad, *bad_kids]))
    assert store.wait_loaded(20)
    assert store.stats().upkeep_traces_set_aside == 1

    def fix_and_retry(conn):
        # the cause goes away (an operator corrects the stored value); the next retry passes
        conn.execute("UPDATE spans SET cost_usd = 0.5 WHERE trace_id = ? AND operation = 'tool'", [bad.trace_id])
        return upkeep.retry_quarantined(conn, utcnow() + timedelta(minutes=1))

    retried = store.run_write(fix_and_retry).result(10)
    assert [(t, reason) for t, _, reason in retried] == [(("B", bad.trace_id), None)]
    assert _attempts(store, bad.trace_id) is None
    assert _tool_calls(store, "B") == {bad.trace_id}
