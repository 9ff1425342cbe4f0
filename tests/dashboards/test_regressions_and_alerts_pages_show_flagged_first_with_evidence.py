"""The Regressions page shows the flagged finding first with example traces of both sides (and
the drift chart), and the Alerts page shows the firing rule and its history with links to the
evidence traces: run by Streamlit's AppTest against the real server loaded with real OTLP runs."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import numpy as np
import pytest

from ingest.config import Settings
from tests.dashboards.conftest import open_page, texts
from tests.ingest.analytics.synthetic import now_utc, population, send, spread, wait_first_evaluation
from tests.ingest.conftest import RunningServer, _ServerThread

RULE = {"name": "steps per release", "kind": "release", "metric": "steps", "severity": "critical"}


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    rng = np.random.default_rng(4)
    now = now_utc()
    old = spread(now - timedelta(days=8), now - timedelta(days=1, minutes=5), 200, rng)
    new = spread(now - timedelta(hours=23), now - timedelta(minutes=5), 200, rng)
    runs = population(rng, 200, "shop_agent", "1", old) + population(rng, 200, "shop_agent", "2", new, step_scale=1.3)
    db = Path(tmp_path_factory.mktemp("dash-alerts")) / "steplens.duckdb"
    thread = _ServerThread(Settings(db=db, host="127.0.0.1", grpc_port=0, alerts=[RULE]))
    server = thread.start()
    try:
        wait_first_evaluation(server.http_url)
        send(server.http_url, server.store, runs)
        assert httpx.post(server.http_url + "/api/alerts/check", timeout=30).json()["firing"]
        yield server
    finally:
        thread.stop()


def _trace_links(at) -> list[str]:  # type: ignore[no-untyped-def]
    return [el.proto.query_string.removeprefix("trace_id=") for el in at.get("page_link")
            if el.proto.page.endswith("trace")]


def test_regressions_page_lists_the_flagged_release_first_with_evidence(planted: RunningServer, ui_env) -> None:  # type: ignore[no-untyped-def]
    ui_env(planted.http_url)
    at = open_page("regressions", {"comparison": "release", "since": "30d"})
    assert not at.exception
    shown = texts(at)
    body = httpx.get(planted.http_url + "/api/regressions", params={"comparison": "release", "since": "30d"},
                     timeout=30).json()
    flagged = [f for f in body["findings"] if f["flagged"]]
    assert {f["metric"] for f in flagged} >= {"steps", "input_tokens", "cost_usd"}  # +30% steps drags these along
    assert f"Flagged={len(flagged)}" in shown
    assert "**regression** · shop_agent · `steps`" in shown and "(version 1 → version 2)" in shown
    assert _trace_links(at) == [t for f in flagged for t in (*f["current"]["examples"], *f["baseline"]["examples"])]
    table = at.dataframe[0].value
    assert list(table["verdict"].iloc[: len(flagged)]) == ["regression"] * len(flagged)  # flagged first
    assert set(table["verdict"].iloc[len(flagged):]) <= {"no_change", "insufficient_data"}

def test_regressions_page_draws_the_drift_trend(planted: RunningServer, ui_env) -> None:  # type: ignore[no-untyped-def]
    ui_env(planted.http_url)
    at = open_page("regressions", {"comparison": "drift", "since": "30d"})
    assert not at.exception
    assert "shop_agent" in texts(at)


def test_alerts_page_shows_the_firing_rule_and_its_evidence(planted: RunningServer, ui_env) -> None:  # type: ignore[no-untyped-def]
    ui_env(planted.http_url)
    at = open_page("alerts")
    assert not at.exception
    shown = texts(at)
    assert "Rules firing=1 of 1" in shown
    assert "**firing** · steps per release · shop_agent · critical" in shown
    rules = at.dataframe[0].value
    assert list(rules["rule"]) == ["steps per release"] and list(rules["status"]) == ["firing"]
    events = httpx.get(planted.http_url + "/api/alerts/events", timeout=10).json()["events"]
    assert _trace_links(at) == events[0]["evidence"] and len(events[0]["evidence"]) == 6
