"""Backfill adds the sampled matching runs of a past time range, once: runs stored before the queue
existed do not enter by the live pass, a backfill adds exactly the hash-selected ones of its range,
a second backfill (or an overlapping one) adds none of them again, and the live pass agrees."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import T0, Emitter
from tests.ingest.queues.harness import Api, emit_runs, expected_in_sample, settle

RATE = 0.5


@pytest.mark.parametrize("backend", BACKENDS)
def test_backfill_adds_the_sampled_past_runs_of_its_range_once(queue_server) -> None:
    srv = queue_server()
    api = Api(srv.http_url)
    emitter = Emitter()
    early = emit_runs(emitter, 60, agent="support_agent")  # T0 .. T0+59 s
    late = emit_runs(emitter, 60, start_offset=timedelta(hours=2), agent="support_agent")
    api.send(emitter)
    assert srv.store.wait_loaded(60)
    api.create("past", sampling_rate=RATE)
    assert settle(api, "past", srv.store) == 0, "runs stored before the queue entered it live"

    def picked(runs: list) -> set[str]:
        return {r.trace_id for r in runs if expected_in_sample("default", "past", r.trace_id, RATE)}

    first = api.ok("POST", "/api/queues/past/backfill",
                   json={"since": (T0 - timedelta(minutes=1)).isoformat(), "until": (T0 + timedelta(hours=1)).isoformat()})
    assert first == {"examined": 60, "added": len(picked(early))}
    assert {i["trace_id"] for i in api.items("past")} == picked(early)

    whole = api.ok("POST", "/api/queues/past/backfill", json={"since": (T0 - timedelta(days=1)).isoformat()})
    assert whole == {"examined": 120, "added": len(picked(late))}, "an overlapping backfill added a run twice"
    again = api.ok("POST", "/api/queues/past/backfill", json={"since": (T0 - timedelta(days=1)).isoformat()})
    assert again == {"examined": 120, "added": 0}

    items = api.items("past")
    assert {i["trace_id"] for i in items} == picked(early) | picked(late)
    assert len(items) == len({i["trace_id"] for i in items})
    assert {i["source"] for i in items} == {"backfill"}
    assert settle(api, "past", srv.store) == len(items)


def test_backfill_answers_clear_errors(queue_server) -> None:
    api = Api(queue_server().http_url)
    api.create("q")
    assert api.call("POST", "/api/queues/nope/backfill", json={"since": T0.isoformat()}).status_code == 404
    bad = api.call("POST", "/api/queues/q/backfill",
                   json={"since": T0.isoformat(), "until": (T0 - timedelta(hours=1)).isoformat()})
    assert bad.status_code == 422 and "until must be after since" in bad.text
