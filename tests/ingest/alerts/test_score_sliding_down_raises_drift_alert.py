"""A boolean score that slides down over a week (90% correct falling to 60%) is caught by the
drift chart of that score (`comparison=drift&metrics=score:correct`, CUSUM down) and by a drift
alert rule on it, while an agent whose score holds steady is in control and does not fire; on each
store (DuckDB and ClickHouse)."""

from __future__ import annotations

from datetime import timedelta

import httpx
import numpy as np
import pytest

from tests.ingest.analytics.synthetic import now_utc, population, send, store_overrides, wait_first_evaluation
from tests.ingest.api.harness import BACKENDS
from tests.support.scores_http import post_scores, run_trace_ids

DAYS = 14
PER_DAY = 40
RULE = {"name": "correct drift", "kind": "drift", "metric": "score:correct", "lookback": "15d"}


def _p_correct(agent: str, day: int) -> float:
    """Day 0 is the oldest. The slide starts after the 7 reference days."""
    if agent == "steady" or day < 7:
        return 0.9
    return 0.9 - 0.3 * (day - 6) / (DAYS - 7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_score_drift_flags_the_slide_and_fires_its_rule(server_on, tmp_path, backend: str) -> None:  # type: ignore[no-untyped-def]
    srv = server_on(alerts=[RULE], normalize_processes=0, **store_overrides(backend, tmp_path))
    wait_first_evaluation(srv.http_url)
    rng = np.random.default_rng(7)
    now = now_utc().replace(hour=12, minute=0, second=0, microsecond=0) - timedelta(days=1)
    start = now - timedelta(days=DAYS)
    runs, when = [], []
    for agent in ("sliding", "steady"):
        for day in range(DAYS):
            starts = [start + timedelta(days=day, minutes=10 * i) for i in range(PER_DAY)]
            runs += population(rng, PER_DAY, agent, "1", starts)
            when += [(agent, day)] * PER_DAY
    send(srv.http_url, srv.store, runs)
    scores = []
    for agent in ("sliding", "steady"):
        ids = run_trace_ids(srv.http_url, agent=agent)  # oldest first: day by day
        assert len(ids) == DAYS * PER_DAY
        for i, trace_id in enumerate(ids):
            correct = bool(rng.random() < _p_correct(agent, i // PER_DAY))
            scores.append({"trace_id": trace_id, "name": "correct", "value": correct, "source": "human"})
    post_scores(srv.http_url, scores, srv.store)

    params = {"comparison": "drift", "metrics": "score:correct", "since": start.isoformat(),
              "until": (now + timedelta(days=1)).isoformat()}
    body = httpx.get(srv.http_url + "/api/regressions", params=params, timeout=60).json()
    drift = {d["agent"]: d for d in body["drift"]}
    assert drift["sliding"]["metric"] == "score:correct"
    assert drift["sliding"]["verdict"] == "drift_down" and drift["sliding"]["flagged"], drift["sliding"]
    assert drift["sliding"]["reference_mean"] > drift["sliding"]["current_mean"]
    assert drift["steady"]["verdict"] == "in_control", drift["steady"]
    assert drift["sliding"]["examples"], "the latest bucket's runs judged false are the evidence"

    check = httpx.post(srv.http_url + "/api/alerts/check", timeout=120).json()
    firing = {s["subject"] for s in check["firing"] if s["rule"] == RULE["name"]}
    assert firing == {"sliding"}, check
