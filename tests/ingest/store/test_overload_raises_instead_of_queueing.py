"""Beyond `queue_max_bytes` of accepted-but-unloaded payload, submit raises Overloaded; nothing is dropped."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from ingest.errors import Overloaded
from ingest.normalize import spans_table
from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request


@pytest.mark.parametrize("backend", BACKENDS)
async def test_tiny_queue_overloads(open_store) -> None:
    store = open_store(queue_max_bytes=100, retry_after_s=2)
    root, kids = agent_run(steps=2)
    with pytest.raises(Overloaded) as info:
        await store.submit("p", request([root, *kids]))
    assert info.value.retry_after == 2
    assert store.stats().queue_bytes == 0 and store.stats().requests_submitted == 0
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM spans").fetchone() == (0,)


async def test_queue_full_while_loader_is_busy_then_frees_up(open_store) -> None:
    root, kids = agent_run(steps=1)
    req = request([root, *kids])
    # A queued request holds its spool record and its normalized table until loaded: both count.
    size = len(req.SerializeToString()) + spans_table("p", req, datetime.now(UTC)).nbytes
    store = open_store(queue_max_bytes=size * 3)
    release = threading.Event()
    blocker = store.run_write(lambda conn: release.wait(10))  # hold the writer: nothing gets loaded

    accepted = []
    rejected = 0
    for _ in range(6):
        root, kids = agent_run(steps=1)
        try:
            await store.submit("p", request([root, *kids]))
            accepted.append(root.trace_id)
        except Overloaded:
            rejected += 1
    assert 1 <= len(accepted) <= 3 and rejected == 6 - len(accepted)
    assert 0 < store.stats().queue_bytes <= size * 3 + 100
    assert store.metrics.queue_bytes._value.get() == store.stats().queue_bytes

    release.set()
    blocker.result(10)
    assert store.wait_loaded(10)
    assert store.stats().queue_bytes == 0
    with store.read() as cur:
        stored = {r[0] for r in cur.execute("SELECT DISTINCT trace_id FROM spans").fetchall()}
    assert stored == set(accepted)  # every accepted request stored, none of the rejected ones
    root, kids = agent_run(steps=1)
    await store.submit("p", request([root, *kids]))  # room again


@pytest.mark.parametrize("backend", BACKENDS)
async def test_stopped_store_refuses_with_overloaded(open_store) -> None:
    store = open_store()
    store.stop()
    root, kids = agent_run(steps=1)
    with pytest.raises(Overloaded):
        await store.submit("p", request([root, *kids]))
    assert not store.ready()
