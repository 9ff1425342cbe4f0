"""Runs enter a queue as they arrive, at its sampling rate: exactly the runs whose hash falls under
the rate (so the count is binomial around rate x runs), only runs matching the filter, and a run
whose spans are sent again or arrive late never enters twice."""

from __future__ import annotations

import math

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import Emitter
from tests.ingest.queues.harness import Api, emit_runs, expected_in_sample, late_span, settle

RUNS, RATE = 200, 0.25


@pytest.mark.parametrize("backend", BACKENDS)
def test_arriving_runs_enter_at_the_sampling_rate_exactly_the_hashed_ones(queue_server) -> None:
    srv = queue_server()
    api = Api(srv.http_url)
    api.create("review", sampling_rate=RATE, filter={"agent": "support_agent", "ok": False})
    emitter = Emitter()
    matching = emit_runs(emitter, RUNS, agent="support_agent", ok=False, stop_reason="tool_error_exhausted")
    other_agent = emit_runs(emitter, 40, agent="billing_agent", ok=False, stop_reason="tool_error_exhausted")
    succeeded = emit_runs(emitter, 40, agent="support_agent", ok=True)
    batch = emitter.request()
    api.send_request(batch)
    api.send_request(batch)  # a retried export
    total = settle(api, "review", srv.store)

    expected = {r.trace_id for r in matching if expected_in_sample("default", "review", r.trace_id, RATE)}
    items = api.items("review")
    got = [i["trace_id"] for i in items]
    assert len(got) == len(set(got)) == total, "a run entered twice"
    assert set(got) == expected
    sd = math.sqrt(RUNS * RATE * (1 - RATE))
    assert abs(len(expected) - RUNS * RATE) <= 4 * sd, len(expected)  # the hash samples like a coin
    assert not {r.trace_id for r in other_agent + succeeded} & set(got)
    assert all(i["source"] == "live" and i["status"] == "pending" and i["decisions"] == [] for i in items)

    # late spans of runs already looked at (in the queue and not): their rows change, the queue does not
    late = Emitter()
    for run in matching[:20]:
        late_span(late, run.trace_id)
    api.send(late)
    assert settle(api, "review", srv.store) == total
    assert sorted(i["trace_id"] for i in api.items("review")) == sorted(got)
