"""The Regressions page shows a planted drop of a reviewer's `correct` score like any other metric
(flagged first, with the runs judged false as evidence), and its drift view charts a score when
asked (`metric=score:correct`): AppTest against the real server, runs sent as OTLP, scores posted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from ingest.config import Settings
from tests.dashboards.conftest import open_page, texts
from tests.ingest.analytics.synthetic import now_utc, population, send, spread
from tests.ingest.conftest import RunningServer, _ServerThread
from tests.support.scores_http import post_scores, run_trace_ids

N = 200


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    rng = np.random.default_rng(11)
    now = now_utc()
    old = spread(now - timedelta(days=12), now - timedelta(days=1, minutes=5), N, rng)
    new = spread(now - timedelta(hours=23), now - timedelta(minutes=5), N, rng)
    runs = population(rng, N, "shop_agent", "1", old) + population(rng, N, "shop_agent", "2", new)
    db = Path(tmp_path_factory.mktemp("dash-scores")) / "steplens.duckdb"
    thread = _ServerThread(Settings(db=db, host="127.0.0.1", grpc_port=0, alerts_defaults=False))
    server = thread.start()
    try:
        send(server.http_url, server.store, runs)
        scores = []
        for version, share in (("1", 0.9), ("2", 0.6)):
            for trace_id in run_trace_ids(server.http_url, version=version):
                scores.append({"trace_id": trace_id, "name": "correct", "value": bool(rng.random() < share),
                               "source": "human"})
        post_scores(server.http_url, scores, server.store)
        yield server
    finally:
        thread.stop()


def _trace_links(at: Any) -> list[str]:
    return [el.proto.query_string.removeprefix("trace_id=") for el in at.get("page_link")
            if el.proto.page.endswith("trace")]


def test_a_score_drop_is_a_flagged_finding_with_runs_judged_false(judged: RunningServer, ui_env) -> None:  # type: ignore[no-untyped-def]
    ui_env(judged.http_url)
    at = open_page("regressions", {"comparison": "release", "since": "30d"})
    assert not at.exception
    assert "**regression** · shop_agent · `score:correct`" in texts(at)
    body = httpx.get(judged.http_url + "/api/regressions", params={"comparison": "release", "since": "30d"},
                     timeout=30).json()
    [f] = [f for f in body["findings"] if f["metric"] == "score:correct"]
    assert set(f["current"]["examples"]) <= set(_trace_links(at)) and f["current"]["examples"]
    table = at.dataframe[0].value
    assert "score:correct" in set(table["metric"])


def test_the_drift_view_charts_a_score(judged: RunningServer, ui_env) -> None:  # type: ignore[no-untyped-def]
    ui_env(judged.http_url)
    at = open_page("regressions", {"comparison": "drift", "since": "30d", "metric": "score:correct"})
    assert not at.exception
    titles = []
    for el in at.get("plotly_chart"):
        title = json.loads(el.proto.spec)["layout"].get("title", {})
        titles.append(title.get("text") if isinstance(title, dict) else title)
    assert titles == ["shop_agent: score:correct per scored run"]
    at = open_page("regressions", {"comparison": "drift", "since": "30d", "metric": "score:"})
    assert not at.exception  # a bad metric is the API's 422, shown as a message, not a crash
