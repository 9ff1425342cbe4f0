"""Retention on the ClickHouse store: the sweep deletes spans and runs older than retention_days and
keeps newer ones, and every table carries the TTL that ages rows out on merges between sweeps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.ingest.store.otlp_build import agent_run, request


async def test_sweep_deletes_only_what_is_older_than_retention(open_ch_store) -> None:
    store = open_ch_store(retention_days=2)
    now = datetime.now(UTC)
    old_root, old_children = agent_run(start=now - timedelta(days=5), steps=1)
    new_root, new_children = agent_run(start=now - timedelta(hours=1), steps=1)
    await store.submit("p", request([old_root, *old_children, new_root, *new_children]))
    assert store.wait_loaded(20)
    assert store.sweep_retention() in (0, 4)  # a merge may have applied the TTL already
    with store.read() as cur:
        spans = dict(cur.execute("SELECT trace_id, count() FROM spans GROUP BY trace_id").fetchall())
        runs = {t for (t,) in cur.execute("SELECT trace_id FROM runs FINAL").fetchall()}
        ttl = cur.execute("SELECT create_table_query FROM system.tables WHERE database = 'steplens' "
                          "AND name = 'spans'").fetchone()[0]
    assert spans == {new_root.trace_id: 4}
    assert new_root.trace_id in runs and old_root.trace_id not in runs
    assert "TTL toDateTime(start_time) + toIntervalDay(2)" in ttl
