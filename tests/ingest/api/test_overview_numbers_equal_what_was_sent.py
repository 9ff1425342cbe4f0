"""GET /api/overview: totals, stop-reason mix, percentiles and the time series equal what was sent."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from ingest.api.overview import choose_bucket
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import T0, Emitter, RunSpec
from tracer.conventions import StopReason


def _quantile(values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (what DuckDB's quantile_cont computes)."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@pytest.mark.parametrize("backend", BACKENDS)
def test_overview_over_six_hours(server):
    emitter = Emitter()
    reasons = [StopReason.FINISH, StopReason.FINISH, StopReason.MAX_STEPS, StopReason.FINISH, StopReason.TIMEOUT]
    specs = []
    for i in range(30):
        reason = reasons[i % len(reasons)]
        specs.append(
            emitter.run(
                RunSpec(
                    start=T0 + timedelta(minutes=11 * i + 1),
                    ok=reason == StopReason.FINISH,
                    stop_reason=reason,
                    steps=1 + i % 4,
                    duration=timedelta(milliseconds=200 + 37 * i),
                    cost_per_step=0.002,
                    failing_tools=i % 2,
                )
            )
        )
    outside = emitter.run(RunSpec(start=T0 + timedelta(hours=7)))  # after `until`: not counted
    server.send(emitter.request())

    r = server.get("/api/overview", since="2025-03-01T12:00:00Z", until="2025-03-01T18:00:00Z")
    assert r.status_code == 200, r.text
    body = r.json()
    assert outside.trace_id not in r.text
    assert body["bucket_seconds"] == 300
    t = body["totals"]
    assert t["runs"] == 30
    assert t["ok_runs"] == sum(s.ok for s in specs) and t["failed_runs"] == 30 - t["ok_runs"]
    assert t["success_rate"] == pytest.approx(t["ok_runs"] / 30)
    durations = [s.duration_ms for s in specs]
    assert t["p50_duration_ms"] == pytest.approx(_quantile(durations, 0.5))
    assert t["p95_duration_ms"] == pytest.approx(_quantile(durations, 0.95))
    assert t["mean_steps"] == pytest.approx(sum(s.steps for s in specs) / 30)
    assert t["input_tokens"] == sum(s.input_tokens for s in specs)
    assert t["output_tokens"] == sum(s.output_tokens for s in specs)
    assert t["cost_usd"] == pytest.approx(sum(s.cost_usd for s in specs))
    assert t["llm_calls"] == sum(s.steps for s in specs)
    assert t["tool_errors"] == sum(min(s.failing_tools, s.steps) for s in specs)
    mix = {m["stop_reason"]: m["runs"] for m in body["stop_reasons"]}
    assert mix == dict(Counter(str(s.stop_reason) for s in specs))

    series = body["series"]
    assert len(series) == 72
    assert series[0]["start"] == "2025-03-01T12:00:00Z" and series[-1]["end"] == "2025-03-01T18:00:00Z"
    expected = Counter((s.start - T0) // timedelta(minutes=5) for s in specs)
    assert [b["runs"] for b in series] == [expected.get(i, 0) for i in range(72)]
    assert sum(b["cost_usd"] for b in series) == pytest.approx(t["cost_usd"])
    empty = series[1]
    assert empty["runs"] == 0 and empty["success_rate"] is None and empty["p50_duration_ms"] is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_filters_apply_and_empty_ranges_are_zero_not_errors(server):
    emitter = Emitter()
    emitter.run(RunSpec(start=T0, agent="a1"))
    emitter.run(RunSpec(start=T0, agent="a2", ok=False, stop_reason=StopReason.CANCELLED))
    server.send(emitter.request())
    body = server.get("/api/overview", agent="a2", since="2025-03-01T00:00:00Z", until="2025-03-02T00:00:00Z").json()
    assert body["totals"]["runs"] == 1 and body["totals"]["success_rate"] == 0.0
    assert body["stop_reasons"] == [{"stop_reason": "cancelled", "runs": 1}]
    body = server.get("/api/overview", since="2020-01-01T00:00:00Z", until="2020-01-08T00:00:00Z").json()
    assert body["totals"]["runs"] == 0 and body["totals"]["success_rate"] is None
    assert body["bucket_seconds"] == 3600 and len(body["series"]) == 168
    # No `since`: the range starts at the first run and ends now, in day buckets for a year-old run.
    body = server.get("/api/overview").json()
    assert body["totals"]["runs"] == 2
    assert body["since"] <= "2025-03-01T12:00:00Z" and sum(b["runs"] for b in body["series"]) == 2


@pytest.mark.parametrize(
    "span, bucket",
    [
        (timedelta(minutes=30), timedelta(minutes=1)),
        (timedelta(hours=6), timedelta(minutes=5)),
        (timedelta(hours=24), timedelta(minutes=15)),
        (timedelta(days=7), timedelta(hours=1)),
        (timedelta(days=14), timedelta(hours=6)),
        (timedelta(days=30), timedelta(days=1)),
        (timedelta(days=90), timedelta(days=1)),
        (timedelta(days=3 * 365), timedelta(days=7)),
        (datetime(2100, 1, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC), timedelta(days=24)),
    ],
)
def test_bucket_follows_the_range(span, bucket):
    assert choose_bucket(span) == bucket
