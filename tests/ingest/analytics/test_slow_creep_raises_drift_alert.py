"""A slow creep of +1% mean steps per day over two weeks (after a stable reference week) raises
the drift alert within the two weeks, while an agent whose steps stay flat never alarms. Window
comparisons miss such a creep (each day looks like the day before); the CUSUM must not.

Runs go in as real OTLP through the real server; the drift verdict comes from
`GET /api/regressions?comparison=drift` and the alert from `POST /api/alerts/check`, on each store
(DuckDB and ClickHouse).

Why 150 runs a day: at 60 the creep is only ~3 standard errors after ten days and any chart either
misses it or false-alarms on flat agents a few % of the time. At 150, with the default k=1, h=6,
bench/regression_sim.py measures flat agents alarming in ~0.3% of seeds and the creep missed in
~0.1%, so this test passes on the procedure, not on its seed.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import numpy as np
import pytest

from tests.ingest.analytics.synthetic import now_utc, population, send, spread, wait_first_evaluation
from tests.ingest.api.harness import BACKENDS

RUNS_PER_DAY = 150
REFERENCE_DAYS = 7
CREEP_DAYS = 14


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_percent_a_day_creep_raises_the_drift_alert_within_two_weeks(start_ingest_server, backend: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(11)
    now = now_utc().replace(hour=0, minute=0, second=0, microsecond=0)  # whole UTC days: one bucket each
    start = now - timedelta(days=REFERENCE_DAYS + CREEP_DAYS)
    runs = []
    for day in range(REFERENCE_DAYS + CREEP_DAYS):
        lo = start + timedelta(days=day)
        starts = spread(lo, lo + timedelta(days=1) - timedelta(minutes=1), RUNS_PER_DAY, rng)
        scale = 1.01 ** max(0, day - REFERENCE_DAYS + 1)  # +1% per creep day, compounding
        runs += population(rng, RUNS_PER_DAY, "creeping_agent", "1", starts, step_scale=scale)
        runs += population(rng, RUNS_PER_DAY, "flat_agent", "1", starts)
    rule = {"name": "steps creep", "kind": "drift", "metric": "steps", "lookback": f"{REFERENCE_DAYS + CREEP_DAYS}d",
            "drift": {"bucket": "1d", "reference_buckets": REFERENCE_DAYS}, "severity": "critical"}
    srv = start_ingest_server(grpc_port=0, alerts=[rule], store=backend)
    wait_first_evaluation(srv.http_url)
    send(srv.http_url, srv.store, runs)
    creep_start = start + timedelta(days=REFERENCE_DAYS)

    with httpx.Client(base_url=srv.http_url, timeout=30) as client:
        # Day by day, as the evaluator would have seen it: when did the alarm first go up?
        first_day = None
        for day in range(1, CREEP_DAYS + 1):
            until = creep_start + timedelta(days=day)
            r = client.get("/api/regressions", params={
                "comparison": "drift", "since": start.isoformat(), "until": until.isoformat(),
                "bucket": "1d", "reference_buckets": REFERENCE_DAYS,
            })
            assert r.status_code == 200, r.text
            by_agent = {d["agent"]: d for d in r.json()["drift"]}
            assert by_agent["flat_agent"]["verdict"] == "in_control", (day, by_agent["flat_agent"]["reason"])
            assert by_agent["flat_agent"]["first_alarm"] is None
            if by_agent["creeping_agent"]["verdict"] == "drift_up" and first_day is None:
                first_day = day
                creeping = by_agent["creeping_agent"]
        assert first_day is not None, "the creep was never detected within the two weeks"
        assert datetime.fromisoformat(creeping["first_alarm"]).replace(tzinfo=UTC) >= creep_start  # not on noise
        assert creeping["relative_change"] > 0 and creeping["reference_runs"] >= (REFERENCE_DAYS - 1) * RUNS_PER_DAY
        assert creeping["flagged"] and len(creeping["examples"]) == 3
        assert any(p["alarm"] for p in creeping["points"])

        # The configured drift rule fires for the creeping agent only, with evidence traces.
        r = client.post("/api/alerts/check")
        assert r.status_code == 200, r.text
        check = r.json()
        assert check["errors"] == {}
        assert {(f["rule"], f["subject"]) for f in check["firing"]} == {("steps creep", "creeping_agent")}
        [event] = check["events"]
        assert event["kind"] == "firing" and event["severity"] == "critical" and len(event["evidence"]) == 3
        trace = client.get(f"/api/traces/{event['evidence'][0]}").json()
        assert trace["run"]["agent"] == "creeping_agent"
