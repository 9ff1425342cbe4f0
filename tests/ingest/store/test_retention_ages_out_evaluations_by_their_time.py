"""Retention deletes online evaluators' outcomes older than `retention_days` (by when they were
evaluated) in the sweep's bounded chunks (on ClickHouse: the worker's sweep, beside the TTL), and
keeps the recent ones, on both stores: the evaluations table never
outgrows what the store keeps of the runs it judged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ingest.evaluators import state
from ingest.store.work import work_of
from tests.ingest.api.harness import BACKENDS


@pytest.mark.parametrize("backend", BACKENDS)
def test_sweep_deletes_only_old_evaluations(open_store, backend: str) -> None:
    store = open_store(store_kwargs={"retention_chunk_rows": 2}, retention_days=7)
    evaluations = work_of(store).evaluations
    now = datetime.now(UTC).replace(tzinfo=None)
    for i, days in enumerate([30, 20, 10, 8, 9, 1, 0.01]):
        outcome = state.Outcome("p", "rule", f"{i + 1:032x}", state.DONE, "s", f"id{i}", 1.0, "true", True, "ok", 1,
                                None, evaluated_at=now - timedelta(days=days))
        store.run_write(lambda conn, o=outcome: evaluations.record(conn, o, now)).result(10)
    store.sweep_retention(timeout=20)
    with store.read() as cur:
        left = cur.execute("SELECT count(*), min(evaluated_at) FROM evaluations").fetchone()
    assert left[0] == 2
    assert left[1] > now - timedelta(days=7)
