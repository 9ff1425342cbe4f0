"""The Regressions page opened on "last 24 h vs the 7 days before" whatever the data, so a new user
saw an empty answer while two versions sat in the store. Without a comparison in the link it must
open on release vs release when the range holds two versions of an agent, on the drift trend when
it holds one, and on the window comparison only when neither has runs; widening the range to the
whole history (and saying so) when the sidebar's range has nothing. AppTest against the real server
loaded with real kernel runs (two versions of one agent, single-version agents with a run or two),
and a server with 10 days of runs of a single version."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import numpy as np

from tests.dashboards.conftest import LoadedServer, open_page, texts
from tests.ingest.analytics.synthetic import now_utc, population, send, spread


def _agents_by_versions(url: str) -> tuple[str, str]:
    runs = httpx.get(f"{url}/api/runs", params={"limit": 1000}, timeout=30).raise_for_status().json()["runs"]
    versions: dict[str, set[str]] = {}
    for r in runs:
        versions.setdefault(r["agent"], set()).add(r["version"])
    two = next(a for a, v in versions.items() if len(v) >= 2)
    one = next(a for a, v in versions.items() if len(v) == 1)
    return two, one


def test_opens_on_release_then_drift_then_window(loaded_server: LoadedServer, ui_env: Callable[..., None]) -> None:
    ui_env(loaded_server.url)
    two, one = _agents_by_versions(loaded_server.url)
    # `one` has a run or two: too few per bucket for a trend, so nothing to open on but the window.
    cases = [({}, "release"), ({"agent": two}, "release"), ({"agent": one}, "window"),
             ({"agent": "no-such-agent"}, "window")]
    for query, expected in cases:
        at = open_page("regressions", query)
        assert not at.exception, query
        assert at.radio[0].value == expected, (query, at.radio[0].value)
        assert at.query_params["comparison"] == [expected] or at.query_params["comparison"] == expected, query
        assert at.metric, query  # the comparison's answer is drawn, not a blank page

    at = open_page("regressions", {"comparison": "window"})  # a link that names one keeps it
    assert at.radio[0].value == "window"


def test_one_version_over_days_opens_on_drift_over_the_whole_history(
    start_ingest_server: Callable[..., Any], ui_env: Callable[..., None]
) -> None:
    srv = start_ingest_server(grpc_port=0)
    rng = np.random.default_rng(4)
    now = now_utc()
    send(srv.http_url, srv.store, population(rng, 200, "steady", "1", spread(now - timedelta(days=10), now - timedelta(days=2), 200, rng)))
    ui_env(srv.http_url)
    at = open_page("regressions", {})  # the sidebar's default 24 h holds no run
    assert not at.exception
    assert at.radio[0].value == "drift"
    assert "Opened on the whole history" in texts(at)
    assert at.get("plotly_chart"), "the drift trend is drawn"
