"""The default release comparison ordered versions by their first run INSIDE the time range: with
both versions still serving, `since=24h` could see v2 first and compare v1 against v2, the wrong way
round. Versions are now ordered by their first run over the whole history (the documented "latest
first-seen version vs the one first seen before it"); the time range only selects which versions
take part. An explicit pair always wins."""

from __future__ import annotations

from datetime import timedelta

import httpx
import numpy as np
import pytest

from tests.ingest.analytics.synthetic import now_utc, population, send, spread

N = 120


@pytest.fixture(scope="module")
def interleaved(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from ingest.config import Settings
    from tests.ingest.conftest import _ServerThread

    rng = np.random.default_rng(7)
    now = now_utc()
    runs = []
    # v0: retired long ago; v1: since 8 days; v2: released 3 days ago; v1 and v2 both still serve.
    runs += population(rng, N, "shop", "v0", spread(now - timedelta(days=12), now - timedelta(days=10), N, rng))
    runs += population(rng, N, "shop", "v1", spread(now - timedelta(days=8), now - timedelta(days=2), N, rng))
    runs += population(rng, N, "shop", "v2", spread(now - timedelta(days=3), now - timedelta(days=2), N, rng),
                       step_scale=1.4)
    # Inside the last 24 h, v2's first run comes BEFORE v1's first run.
    runs += population(rng, N, "shop", "v2", spread(now - timedelta(hours=23, minutes=30), now - timedelta(hours=1),
                                                     N, rng), step_scale=1.4)
    runs += population(rng, N, "shop", "v1", spread(now - timedelta(hours=23), now - timedelta(hours=1), N, rng))
    settings = Settings(db=tmp_path_factory.mktemp("interleaved") / "steplens.duckdb", host="127.0.0.1", grpc_port=0)
    server = _ServerThread(settings)
    srv = server.start()
    try:
        send(srv.http_url, srv.store, runs)
        yield srv
    finally:
        server.stop()


def _steps(srv, **params):  # type: ignore[no-untyped-def]
    r = httpx.get(srv.http_url + "/api/regressions", params={"comparison": "release", "metrics": "steps", **params},
                  timeout=30)
    assert r.status_code == 200, r.text
    [finding] = [f for f in r.json()["findings"] if f["agent"] == "shop"]
    return finding


def test_time_range_does_not_reverse_the_release_order(interleaved) -> None:  # type: ignore[no-untyped-def]
    f = _steps(interleaved, since="24h")
    assert (f["baseline"]["label"], f["current"]["label"]) == ("version v1", "version v2")
    assert f["baseline"]["n"] == N and f["current"]["n"] == N  # only the runs inside the range
    assert f["verdict"] == "regression"


def test_whole_history_compares_the_latest_release_with_the_one_before(interleaved) -> None:  # type: ignore[no-untyped-def]
    f = _steps(interleaved)
    assert (f["baseline"]["label"], f["current"]["label"]) == ("version v1", "version v2")


def test_explicit_pair_wins(interleaved) -> None:  # type: ignore[no-untyped-def]
    f = _steps(interleaved, baseline_version="v2", current_version="v1")
    assert (f["baseline"]["label"], f["current"]["label"]) == ("version v2", "version v1")
    assert f["verdict"] == "improvement"
