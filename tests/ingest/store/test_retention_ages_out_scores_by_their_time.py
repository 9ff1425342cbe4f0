"""Retention deletes scores older than `retention_days` (by when they were scored), in the same
bounded chunks as spans, and keeps the recent ones: a store with retention never keeps judgments
of data it promised to forget."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ingest.scores.model import ScoreIn
from ingest.scores.submit import submit_scores
from tests.ingest.api.harness import BACKENDS

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


async def test_sweep_deletes_only_old_scores_in_chunks(open_store) -> None:
    store = open_store(store_kwargs={"retention_chunk_rows": 2}, retention_days=7)
    now = datetime.now(UTC)
    scores = [ScoreIn(name="helpful", value=True, trace_id=f"{i + 1:032x}", created_at=now - timedelta(days=d))
              for i, d in enumerate([30, 20, 10, 8, 9, 1, 0.01])]
    await submit_scores(store, "p", scores)
    assert store.wait_loaded(10)
    store.sweep_retention(timeout=20)
    with store.read() as cur:
        left = cur.execute("SELECT count(*), min(created_at) FROM scores").fetchone()
    assert left[0] == 2
    assert left[1] > now.replace(tzinfo=None) - timedelta(days=7)
