"""A load commits its spans and the list of traces awaiting analytics upkeep together; the upkeep pass
runs later. A crash in between (the staged spans, kept in memory, are gone) must not leave those
traces' tool costs, model usage or replanning rows missing: the next start recomputes them from the
stored spans, and they equal what an uninterrupted server computed.

DuckDB only: its upkeep pass runs after the load; ClickHouse derives runs in the load itself (crash:
tests/ingest/store/clickhouse/test_kill_9_server_keeps_every_acked_span_once.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb

from ingest.normalize import spans_table
from ingest.store.loading import ensure_position_row, load_batch
from ingest.store.migrate import migrate
from ingest.store.spool import Position
from tests.ingest.store.otlp_build import T0, S, agent_run, request
from tracer import conventions as c

TABLES = {
    "tool_calls": "trace_id, span_id",
    "tool_carry": "trace_id, span_id, model",
    "run_models": "trace_id, model",
    "plan_spans": "trace_id, span_id",
    "tool_rollup": "start_time, tool_name, part, part_key",
}


def _requests():
    """Three runs (one with a plan span), the third split over two requests, tools failing in some."""
    out = []
    for i in range(3):
        root, kids = agent_run(start=T0 + timedelta(minutes=i), steps=3, tool_error_steps=i)
        plan = S(root.trace_id, "plan support_agent", parent=root.span_id, start=root.start,
                 duration=timedelta(milliseconds=50),
                 attrs={c.GEN_AI_OPERATION_NAME: c.OP_PLAN, c.PLAN_VERSION: 1, c.PLAN_STEPS: 3})
        spans = [root, *kids] + ([plan] if i == 0 else [])
        out += [request(spans[:5]), request(spans[5:])] if i == 2 else [request(spans)]
    return out


def _rows(cur) -> dict[str, list[tuple]]:
    return {t: cur.execute(f"SELECT * EXCLUDE (project) FROM {t} ORDER BY {order}").fetchall()
            for t, order in TABLES.items()}


async def test_traces_loaded_before_a_crash_get_their_analytics_on_restart(open_store, make_settings, tmp_path):
    requests = _requests()  # the same spans (ids included) for both servers
    reference = open_store(db=tmp_path / "reference.duckdb")
    for r in requests:
        await reference.submit("p", r)
    assert reference.wait_loaded(10)
    with reference.read() as cur:
        expected = _rows(cur)
    assert len(expected["tool_calls"]) == 9 and len(expected["plan_spans"]) == 1 and expected["tool_rollup"]

    # The crashed server: its loads committed, its upkeep pass never ran, its memory is gone.
    crashed = tmp_path / "steplens.duckdb"
    conn = duckdb.connect(str(crashed))
    migrate(conn)
    now = datetime.now(UTC).replace(tzinfo=None)
    ensure_position_row(conn, now)
    for r in requests:
        load_batch(conn, spans_table("p", r, now), Position(0, 0), now)
    assert conn.execute("SELECT count(*) FROM tool_calls").fetchone() == (0,)
    assert conn.execute("SELECT count(DISTINCT trace_id) FROM upkeep_pending").fetchone() == (3,)
    conn.close()

    restarted = open_store(db=crashed)
    assert restarted.wait_loaded(10)
    with restarted.read() as cur:
        assert _rows(cur) == expected
        assert cur.execute("SELECT count(*) FROM upkeep_pending").fetchone() == (0,)
