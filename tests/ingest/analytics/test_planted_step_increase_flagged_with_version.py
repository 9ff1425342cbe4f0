"""A planted +20% in mean steps for agent version 2 is flagged (version named, evidence traces from
both sides); a planted +3% is not. Runs go in as real OTLP through the real server and the verdict
comes out of `GET /api/regressions` over real HTTP, for both release-vs-release and window-vs-baseline,
on each store (DuckDB and ClickHouse: the same spans, the same verdicts).
"""

from __future__ import annotations

from datetime import timedelta

import httpx
import numpy as np
import pytest

from tests.ingest.analytics.synthetic import now_utc, population, send, spread, store_overrides
from tests.ingest.api.harness import BACKENDS

RUNS_PER_SIDE = 300


@pytest.fixture(scope="module", params=BACKENDS)
def planted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from ingest.config import Settings
    from tests.ingest.conftest import _ServerThread

    rng = np.random.default_rng(20)
    now = now_utc()
    # version 1 ran during the 7 days before the last 24 h; version 2 during the last 24 h
    old = spread(now - timedelta(days=8), now - timedelta(days=1, minutes=5), RUNS_PER_SIDE, rng)
    new = spread(now - timedelta(hours=23), now - timedelta(minutes=5), RUNS_PER_SIDE, rng)
    runs = []
    for agent, scale in (("planted20", 1.2), ("planted3", 1.03)):
        runs += population(rng, RUNS_PER_SIDE, agent, "1", old)
        runs += population(rng, RUNS_PER_SIDE, agent, "2", new, step_scale=scale)
    root = tmp_path_factory.mktemp(f"planted-{request.param}")
    settings = Settings(db=root / "steplens.duckdb", host="127.0.0.1", grpc_port=0, normalize_processes=0,
                        **store_overrides(request.param, root))
    server = _ServerThread(settings)
    srv = server.start()
    try:
        send(srv.http_url, srv.store, runs)
        yield srv
    finally:
        server.stop()


def _get(srv, **params):  # type: ignore[no-untyped-def]
    r = httpx.get(srv.http_url + "/api/regressions", params=params, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _steps(body, agent):  # type: ignore[no-untyped-def]
    [finding] = [f for f in body["findings"] if f["agent"] == agent and f["metric"] == "steps"]
    return finding


def test_release_comparison_flags_plus_20_percent_and_names_the_version(planted) -> None:  # type: ignore[no-untyped-def]
    body = _get(planted, comparison="release")
    f = _steps(body, "planted20")
    assert f["verdict"] == "regression" and f["flagged"] is True
    assert f["baseline"]["label"] == "version 1" and f["current"]["label"] == "version 2"
    assert f["baseline"]["n"] == RUNS_PER_SIDE and f["current"]["n"] == RUNS_PER_SIDE
    assert 0.12 < f["relative_change"] < 0.28
    assert f["q_value"] < 0.01 and f["p_value"] <= f["q_value"]
    assert f["effect_size"] > 0  # current runs tend to take more steps
    assert f["baseline"]["ci_low"] < f["baseline"]["value"] < f["baseline"]["ci_high"]
    assert f["current"]["ci_low"] > f["baseline"]["ci_high"]  # the intervals do not even overlap
    assert len(f["current"]["examples"]) == 3 and len(f["baseline"]["examples"]) == 3
    # the evidence traces exist and are the runs of the right versions
    for side, version in (("current", "2"), ("baseline", "1")):
        for trace_id in f[side]["examples"]:
            run = httpx.get(f"{planted.http_url}/api/traces/{trace_id}", timeout=10).json()["run"]
            assert run["version"] == version and run["agent"] == "planted20"
    # flagged findings are listed first
    flags = [x["flagged"] for x in body["findings"]]
    assert flags == sorted(flags, reverse=True)


def test_release_comparison_does_not_flag_plus_3_percent(planted) -> None:  # type: ignore[no-untyped-def]
    body = _get(planted, comparison="release")
    f = _steps(body, "planted3")
    assert f["flagged"] is False and f["verdict"] == "no_change"
    assert not any(x["flagged"] for x in body["findings"] if x["agent"] == "planted3" and x["metric"] == "steps")


def test_window_comparison_flags_the_same_shift(planted) -> None:  # type: ignore[no-untyped-def]
    body = _get(planted, comparison="window", window="24h", baseline="7d")
    assert _steps(body, "planted20")["verdict"] == "regression"
    assert _steps(body, "planted3")["flagged"] is False
    assert body["flagged"] == sum(f["flagged"] for f in body["findings"])


def test_too_few_runs_is_insufficient_data_not_a_verdict(planted) -> None:  # type: ignore[no-untyped-def]
    body = _get(planted, comparison="release", min_samples=1000, metrics="steps")
    assert {f["verdict"] for f in body["findings"]} == {"insufficient_data"}
    assert all(f["p_value"] is None for f in body["findings"])


def test_bad_parameters_are_422(planted) -> None:  # type: ignore[no-untyped-def]
    for params in ({"metrics": "stepz"}, {"window": "yesterday"}, {"alpha": 2}, {"comparison": "weekly"}):
        r = httpx.get(planted.http_url + "/api/regressions", params=params, timeout=10)
        assert r.status_code == 422, (params, r.text)
