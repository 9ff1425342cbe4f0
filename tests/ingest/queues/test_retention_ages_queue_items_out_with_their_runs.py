"""Retention removes a queue's items with their runs (by the run's start), so `next` never hands out
a run that is gone; items of recent runs stay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.ingest.api.otlp_runs import Emitter, RunSpec
from tests.ingest.queues.harness import Api, emit_runs


def test_items_of_runs_retention_removed_are_gone_and_never_handed_out(queue_server) -> None:
    srv = queue_server(retention_days=7)
    api = Api(srv.http_url)
    emitter = Emitter()
    old = {r.trace_id for r in emit_runs(emitter, 4)}  # 2025: beyond 7 days
    now = datetime.now(UTC) - timedelta(minutes=5)
    recent = {emitter.run(RunSpec(start=now + timedelta(seconds=i))).trace_id for i in range(3)}
    api.send(emitter)
    assert srv.store.wait_loaded(60)
    api.create("keep")
    added = api.ok("POST", "/api/queues/keep/backfill", json={"since": "2000-01-01T00:00:00Z"})["added"]
    assert added == 7
    srv.store.sweep_retention(timeout=30)
    assert {i["trace_id"] for i in api.items("keep")} == recent
    handed = set()
    for who in ("a", "b", "c", "d"):
        item = api.ok("GET", "/api/queues/keep/next", params={"user": who})["item"]
        if item is not None:
            handed.add(item["trace_id"])
    assert handed == recent and not handed & old
