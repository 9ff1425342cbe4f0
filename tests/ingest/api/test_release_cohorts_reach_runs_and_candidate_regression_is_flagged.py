"""Real kernel runs routed by a gray release (kernel.release), traced over OTLP/HTTP into a real
ingest server: every run row carries its release and cohort, `/api/runs?cohort=` lists exactly the
runs the router sent there, shadow mirrors are their own traces (mode shadow, naming their live
run) that stay out of live figures, and `comparison=cohort` flags a candidate that takes more steps
while an A/A split (two versions that behave alike) flags nothing."""

from __future__ import annotations

from collections import Counter

import httpx
import pytest

import tracer
from tests.support.release_runs import USERS, run_release
from tests.support.scores_http import run_trace_ids
from tracer.conventions import ReleaseCohort

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    import asyncio

    from ingest.config import Settings
    from tests.ingest.conftest import _ServerThread

    thread = _ServerThread(Settings(db=tmp_path_factory.mktemp("release") / "steplens.duckdb", host="127.0.0.1",
                                    grpc_port=0, normalize_processes=0, alerts_defaults=False))
    server = thread.start()
    handle = tracer.setup(service_name="release-tests", endpoint=f"{server.http_url}/v1/traces", schedule_delay_ms=50,
                          max_queue_size=65_536)
    try:
        planted = asyncio.run(run_release("desk-v2", "desk", 2, seed=1, shadow_every=6))
        aa = asyncio.run(run_release("calm-v2", "calm", 0, seed=2))
    finally:
        assert handle.shutdown(30), "the tracer could not flush its spans to the test server"
    assert server.store.wait_loaded(60)
    yield server.http_url, planted, aa
    thread.stop()


def test_every_run_row_names_its_release_and_the_cohort_the_router_chose(world) -> None:  # type: ignore[no-untyped-def]
    url, planted, _ = world
    cohorts = planted.cohorts
    want = Counter(cohorts.values())
    assert 60 < want[ReleaseCohort.CANDIDATE] < 160  # ~30% of 360
    for cohort in ("stable", "candidate"):
        listed = run_trace_ids(url, release="desk-v2", cohort=cohort)
        assert sorted(listed) == sorted(t for t, c in cohorts.items() if c == cohort)
    runs = httpx.get(f"{url}/api/runs", params={"release": "desk-v2", "cohort": "candidate", "limit": 5},
                     timeout=30).json()["runs"]
    assert {(r["release_name"], r["release_cohort"], r["version"], r["mode"]) for r in runs} == {
        ("desk-v2", "candidate", "2", "live")}
    bad = httpx.get(f"{url}/api/runs", params={"cohort": "blue"}, timeout=30)
    assert bad.status_code == 422 and "cohort" in bad.text


def test_shadow_mirrors_are_their_own_traces_naming_the_live_run_and_out_of_live_figures(world) -> None:  # type: ignore[no-untyped-def]
    url, planted, _ = world
    live, shadows = planted.live, planted.shadows
    assert len(shadows) == len(USERS) // 6
    listed = httpx.get(f"{url}/api/runs", params={"cohort": "shadow", "mode": "shadow", "limit": 1000},
                       timeout=30).json()["runs"]
    assert {(r["trace_id"], r["release_primary_trace_id"]) for r in listed} == {(s, p) for p, s in shadows}
    assert all(r["mode"] == "shadow" and r["release_name"] == "desk-v2" for r in listed)
    assert not {s for _, s in shadows} & set(live)  # never a child of the live run's trace
    # live figures: the default listing and the overview count the live runs only
    assert run_trace_ids(url, cohort="shadow") == []
    assert len(run_trace_ids(url, release="desk-v2")) == len(USERS)
    totals = httpx.get(f"{url}/api/overview", params={"since": "1d"}, timeout=30).json()["totals"]
    assert totals["runs"] == 2 * len(USERS)


def test_candidate_vs_stable_flags_the_planted_regression_and_not_the_a_a_split(world) -> None:  # type: ignore[no-untyped-def]
    url, *_ = world
    body = httpx.get(f"{url}/api/regressions", params={"comparison": "cohort", "since": "1d"}, timeout=60).json()
    assert body["comparison"] == "cohort"
    by_release = {(f["release"], f["metric"]): f for f in body["findings"]}
    steps = by_release[("desk-v2", "steps")]
    assert steps["flagged"] and steps["verdict"] == "regression"
    assert steps["agent"] == "desk"
    assert steps["baseline"]["label"] == "stable of desk-v2 (version 1)"
    assert steps["current"]["label"] == "candidate of desk-v2 (version 2)"
    assert steps["baseline"]["n"] + steps["current"]["n"] == len(USERS)  # shadows are not a side
    calm = [f for f in body["findings"] if f["release"] == "calm-v2"]
    assert calm and not any(f["flagged"] for f in calm), [f for f in calm if f["flagged"]]
    only = httpx.get(f"{url}/api/regressions", params={"comparison": "cohort", "since": "1d", "release": "calm-v2"},
                     timeout=60).json()
    assert {f["release"] for f in only["findings"]} == {"calm-v2"} and only["flagged"] == 0
    refused = httpx.get(f"{url}/api/regressions", params={"comparison": "cohort", "version": "2"}, timeout=30)
    assert refused.status_code == 400 and "release" in refused.text
