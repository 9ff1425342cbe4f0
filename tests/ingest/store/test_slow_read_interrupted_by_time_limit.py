"""One slow query cannot hang the API: a read cursor is interrupted after `query_timeout_s`.

DuckDB only: DuckDB's interrupt of a cursor (both stores:
tests/ingest/api/test_slow_query_is_cut_off_with_504.py)."""

from __future__ import annotations

import time

import pytest

from ingest.store import QueryTimeout
from tests.ingest.store.otlp_build import agent_run, request


async def test_slow_query_interrupted_and_store_keeps_working(open_store) -> None:
    store = open_store(query_timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(QueryTimeout), store.read() as cur:
        cur.execute("SELECT count(*) FROM range(100000000000) a, range(10) b WHERE a.range % 7 = b.range").fetchall()
    assert time.monotonic() - started < 5

    root, kids = agent_run(steps=1)
    await store.submit("p", request([root, *kids]))  # ingest unaffected
    assert store.wait_loaded(10)
    with store.read() as cur:  # a fresh read gets a fresh time limit
        assert cur.execute("SELECT count(*) FROM spans").fetchone() == (4,)


def test_quick_reads_are_not_interrupted(open_store) -> None:
    store = open_store(query_timeout_s=0.2)
    for _ in range(3):
        with store.read() as cur:
            assert cur.execute("SELECT 42").fetchone() == (42,)
        time.sleep(0.25)  # the timer of a finished read must not hit a later one
    with store.read() as cur:
        assert cur.execute("SELECT 1").fetchone() == (1,)
