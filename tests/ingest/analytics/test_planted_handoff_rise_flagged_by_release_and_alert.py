"""A planted rise of the hand-off rate from version 1 to version 2 (5% -> 20% of 300 runs a side
handed to a human) is flagged by the release comparison and by alert rules on `handoff_rate`
(release and threshold), with handed-off runs as evidence; an agent whose rate stays at 5% is not.
Runs go in as real OTLP with `steplens.run.handoff.reason` on the run span; verdicts come out of the
real server."""

from __future__ import annotations

from datetime import timedelta

import httpx
import numpy as np
import pytest

from tests.ingest.analytics.synthetic import (
    now_utc,
    population,
    send,
    spread,
    store_overrides,
    wait_first_evaluation,
)
from tests.ingest.api.harness import BACKENDS
from tracer.conventions import HandoffReason

RUNS_PER_SIDE = 300
# agent -> version -> runs handed off (of RUNS_PER_SIDE)
HANDED_OFF = {"escalating": {"1": 15, "2": 60}, "steady": {"1": 15, "2": 15}}
RULES = [
    {"name": "handoffs: release", "kind": "release", "metric": "handoff_rate"},
    {"name": "handoffs: over 10%", "kind": "threshold", "metric": "handoff_rate", "threshold": 0.10,
     "window": "24h", "min_samples": 30},
]


@pytest.fixture(scope="module", params=BACKENDS)
def planted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from ingest.config import Settings
    from tests.ingest.conftest import _ServerThread

    rng = np.random.default_rng(17)
    now = now_utc()
    old = spread(now - timedelta(days=8), now - timedelta(days=1, minutes=5), RUNS_PER_SIDE, rng)
    new = spread(now - timedelta(hours=23), now - timedelta(minutes=5), RUNS_PER_SIDE, rng)
    runs = []
    for agent, versions in HANDED_OFF.items():
        for version, starts in (("1", old), ("2", new)):
            side = population(rng, RUNS_PER_SIDE, agent, version, starts, failure_rate=0.0)
            for run in rng.choice(side, versions[version], replace=False):
                run.handoff_reason = HandoffReason.MAX_STEPS.value
            runs += side
    root = tmp_path_factory.mktemp(f"handoffs-{request.param}")
    settings = Settings(db=root / "steplens.duckdb", host="127.0.0.1", grpc_port=0, alerts=RULES, normalize_processes=0,
                        **store_overrides(request.param, root))
    server = _ServerThread(settings)
    srv = server.start()
    try:
        wait_first_evaluation(srv.http_url)
        send(srv.http_url, srv.store, runs)
        yield srv
    finally:
        server.stop()


def _finding(body, agent, metric="handoff_rate"):  # type: ignore[no-untyped-def]
    [finding] = [f for f in body["findings"] if f["agent"] == agent and f["metric"] == metric]
    return finding


def test_release_flags_the_rise_from_5_to_20_percent_with_handed_off_runs_as_evidence(planted) -> None:  # type: ignore[no-untyped-def]
    r = httpx.get(planted.http_url + "/api/regressions", params={"comparison": "release"}, timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    f = _finding(body, "escalating")
    assert f["verdict"] == "regression" and f["flagged"] is True, f
    assert f["test"] == "two_proportion_z"
    assert (f["baseline"]["n"], f["current"]["n"]) == (RUNS_PER_SIDE, RUNS_PER_SIDE)
    assert f["baseline"]["value"] == pytest.approx(15 / 300) and f["current"]["value"] == pytest.approx(60 / 300)
    assert len(f["current"]["examples"]) == 3
    for trace_id in f["current"]["examples"]:
        run = httpx.get(planted.http_url + f"/api/traces/{trace_id}", timeout=30).json()["run"]
        assert run["handoff_reason"] == "max_steps" and run["version"] == "2"
    steady = _finding(body, "steady")
    assert steady["flagged"] is False and steady["verdict"] == "no_change"
    assert steady["current"]["value"] == pytest.approx(15 / 300)


def test_alert_rules_on_handoff_rate_fire_for_the_rise_only(planted) -> None:  # type: ignore[no-untyped-def]
    check = httpx.post(planted.http_url + "/api/alerts/check", timeout=120)
    assert check.status_code == 200, check.text
    body = check.json()
    assert body["errors"] == {}
    firing: dict[str, set[str]] = {}
    for state in body["firing"]:
        firing.setdefault(state["rule"], set()).add(state["subject"])
    assert firing["handoffs: release"] == {"escalating"}
    assert firing["handoffs: over 10%"] == {"escalating"}  # 20% over the last 24 h; steady has 5%
