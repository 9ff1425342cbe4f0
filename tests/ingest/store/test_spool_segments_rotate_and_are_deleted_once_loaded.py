"""The spool does not grow without bound: segments rotate, and a segment goes once all of it is loaded."""

from __future__ import annotations

import pytest

from ingest.store.spool import list_segments
from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


async def test_segments_rotate_and_loaded_ones_are_deleted(open_store, make_settings) -> None:
    spool = make_settings().spool_path
    store = open_store(store_kwargs={"segment_max_bytes": 4096}, commit_interval_ms=0)
    seen: set[int] = set()
    for _ in range(30):
        root, kids = agent_run(steps=2)
        await store.submit("p", request([root, *kids]))
        seen.update(list_segments(spool))
        assert store.wait_loaded(10)
    assert len(seen) > 3  # rotated
    assert len(list_segments(spool)) <= 2  # only the segment being written (and maybe its predecessor)
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM spans").fetchone() == (30 * 7,)
    store.stop()
    store = open_store()
    assert store.stats().replayed_records == 0  # every kept segment was already loaded
