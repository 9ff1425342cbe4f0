"""Retention deletes spans and runs older than `retention_days`, in bounded chunks, and keeps the rest."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


def _counts(store) -> tuple[int, int]:
    with store.read() as cur:
        spans = cur.execute("SELECT count(*) FROM spans").fetchone()[0]
        runs = cur.execute("SELECT count(*) FROM runs").fetchone()[0]
    return spans, runs


async def _load(store, days_ago: list[float]) -> None:
    now = datetime.now(UTC)
    for d in days_ago:
        root, kids = agent_run(start=now - timedelta(days=d), steps=2)
        await store.submit("p", request([root, *kids]))
    assert store.wait_loaded(10)


async def test_sweep_deletes_only_old_rows_in_chunks(open_store) -> None:
    store = open_store(store_kwargs={"retention_chunk_rows": 4}, retention_days=7)
    await _load(store, [30, 20, 10, 8, 1, 0.01])
    if store.name != "duckdb":  # ClickHouse's TTL drops rows already expired when they are written
        assert _counts(store) in ((42, 6), (14, 2))
        assert store.sweep_retention(timeout=20) in (0, 4 * 7)
        assert _counts(store) == (14, 2)
        return  # the chunks and the expiry counters below are the DuckDB sweep's
    assert _counts(store) == (42, 6)
    deleted = store.sweep_retention(timeout=20)
    assert deleted == 4 * 7  # the four runs older than 7 days, 7 spans each, removed 4 rows a chunk
    assert _counts(store) == (14, 2)
    with store.read() as cur:
        oldest = cur.execute("SELECT min(start_time) FROM spans").fetchone()[0]
    assert oldest > datetime.now(UTC).replace(tzinfo=None) - timedelta(days=7)
    stats = store.stats()
    assert stats.spans_expired == 28 and stats.runs_expired == 4
    assert store.metrics.spans_expired._value.get() == 28


async def test_retention_runs_by_itself_and_zero_keeps_everything(open_store) -> None:
    store = open_store(retention_days=0)
    await _load(store, [400, 0.01])
    assert store.sweep_retention() == 0
    assert _counts(store) == (14, 2)
    store.stop()

    store = open_store(retention_days=30, retention_interval_s=1)  # first sweep right at start
    deadline = time.monotonic() + 10
    while _counts(store) != (7, 1) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _counts(store) == (7, 1)
