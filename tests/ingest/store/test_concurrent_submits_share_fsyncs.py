"""Durability does not cost one fsync per request: concurrent submits share the committer's fsync."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


async def test_async_submits_share_fsyncs(open_store) -> None:
    store = open_store(commit_interval_ms=20)
    runs = [agent_run(steps=1) for _ in range(200)]
    await asyncio.gather(*(store.submit("p", request([root, *kids])) for root, kids in runs))
    stats = store.stats()
    assert stats.requests_acked == 200
    # 200 requests, a few group commits: one fsync per request would be 200; how many requests share
    # one depends on how fast this machine normalizes them (21 seen on a loaded 2-core box), so the
    # bound asks for at least 4 requests per fsync on average
    assert 1 <= stats.fsyncs <= 50, stats
    assert store.metrics.spool_fsyncs._value.get() == stats.fsyncs
    assert store.wait_loaded(10)
    with store.read() as cur:
        assert cur.execute("SELECT count(*), count(DISTINCT trace_id) FROM spans").fetchone() == (800, 200)


def test_threaded_blocking_submits_share_fsyncs(open_store) -> None:
    store = open_store(commit_interval_ms=10)
    errors: list[BaseException] = []

    def client() -> None:
        try:
            for _ in range(10):
                root, kids = agent_run(steps=1)
                store.submit_blocking("p", request([root, *kids]), timeout=10)
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    stats = store.stats()
    assert stats.requests_acked == 80
    assert stats.fsyncs < 40, stats  # 8 concurrent clients: at least two requests per fsync on average
    assert store.wait_loaded(10)
    assert store.stats().queue_bytes == 0  # everything loaded: the budget is given back
