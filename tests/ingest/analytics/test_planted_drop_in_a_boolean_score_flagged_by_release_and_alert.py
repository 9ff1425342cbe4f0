"""A planted drop of a boolean score from version 1 to version 2 (90% -> 75% of 300 runs a side
judged `correct`) is flagged by the release comparison, the window comparison and an alert rule
(`metric = "score:correct"`), with runs judged false as evidence; a 2-point change (90% -> 88%) is
not. A numeric score's drop is found by Mann-Whitney, a categorical label's rise by its share.
Runs go in as real OTLP, scores through POST /api/scores, verdicts come out of the real server.
"""

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
from tests.support.scores_http import list_scores, post_scores, run_trace_ids

RUNS_PER_SIDE = 300
# agent -> version -> runs judged correct (of RUNS_PER_SIDE)
CORRECT = {"dropped": {"1": 270, "2": 225}, "steady": {"1": 270, "2": 264}}
RULES = [
    {"name": "correct: release", "kind": "release", "metric": "score:correct"},
    {"name": "helpfulness: release", "kind": "release", "metric": "score:helpfulness"},
    {"name": "every score: release", "kind": "release", "metric": "score:*"},
]


def _scores(rng: np.random.Generator, trace_ids: list[str], agent: str, version: str) -> list[dict]:
    judged = np.zeros(len(trace_ids), dtype=bool)
    judged[: CORRECT[agent][version]] = True
    rng.shuffle(judged)
    dropped_v2 = agent == "dropped" and version == "2"
    helpful = np.clip(np.round(rng.normal(3.4 if dropped_v2 else 4.2, 0.7, len(trace_ids))), 1, 5)
    rude = rng.random(len(trace_ids)) < (0.2 if dropped_v2 else 0.05)
    out = []
    for i, trace_id in enumerate(trace_ids):
        out.append({"trace_id": trace_id, "name": "correct", "value": bool(judged[i]), "source": "human",
                    "author": "reviewer@example.com"})
        out.append({"trace_id": trace_id, "name": "helpfulness", "value": float(helpful[i]), "source": "judge",
                    "author": "judge-model"})
        out.append({"trace_id": trace_id, "name": "tone", "value": "rude" if rude[i] else "friendly",
                    "source": "judge", "author": "judge-model"})
    return out


@pytest.fixture(scope="module", params=BACKENDS)
def planted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from ingest.config import Settings
    from tests.ingest.conftest import _ServerThread

    rng = np.random.default_rng(13)
    now = now_utc()
    old = spread(now - timedelta(days=8), now - timedelta(days=1, minutes=5), RUNS_PER_SIDE, rng)
    new = spread(now - timedelta(hours=23), now - timedelta(minutes=5), RUNS_PER_SIDE, rng)
    runs = []
    for agent in CORRECT:
        runs += population(rng, RUNS_PER_SIDE, agent, "1", old)
        runs += population(rng, RUNS_PER_SIDE, agent, "2", new)
    root = tmp_path_factory.mktemp(f"scores-{request.param}")
    settings = Settings(db=root / "steplens.duckdb", host="127.0.0.1", grpc_port=0, alerts=RULES, normalize_processes=0,
                        **store_overrides(request.param, root))
    server = _ServerThread(settings)
    srv = server.start()
    try:
        wait_first_evaluation(srv.http_url)
        send(srv.http_url, srv.store, runs)
        scores = []
        for agent in CORRECT:
            for version in ("1", "2"):
                ids = run_trace_ids(srv.http_url, agent=agent, version=version)
                assert len(ids) == RUNS_PER_SIDE
                scores += _scores(rng, ids, agent, version)
        post_scores(srv.http_url, scores, srv.store)
        yield srv
    finally:
        server.stop()


def _get(srv, **params):  # type: ignore[no-untyped-def]
    r = httpx.get(srv.http_url + "/api/regressions", params=params, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def _finding(body, agent, metric):  # type: ignore[no-untyped-def]
    [finding] = [f for f in body["findings"] if f["agent"] == agent and f["metric"] == metric]
    return finding


def test_release_flags_the_drop_from_90_to_75_percent_correct_with_runs_judged_false(planted) -> None:  # type: ignore[no-untyped-def]
    body = _get(planted, comparison="release")
    f = _finding(body, "dropped", "score:correct")
    assert f["verdict"] == "regression" and f["flagged"] is True, f
    assert f["test"] == "two_proportion_z"
    assert (f["baseline"]["label"], f["current"]["label"]) == ("version 1", "version 2")
    assert (f["baseline"]["n"], f["current"]["n"]) == (RUNS_PER_SIDE, RUNS_PER_SIDE)
    assert f["baseline"]["value"] == pytest.approx(0.90) and f["current"]["value"] == pytest.approx(0.75)
    assert f["relative_change"] == pytest.approx(0.75 / 0.90 - 1)
    assert f["q_value"] < 0.002 and f["effect_size"] < 0
    assert len(f["current"]["examples"]) == 3
    for trace_id in f["current"]["examples"]:  # the evidence: version 2 runs a reviewer judged wrong
        [score] = list_scores(planted.http_url, trace_id=trace_id, name="correct")
        assert score["value"] is False and score["version"] == "2"


def test_release_does_not_flag_a_two_point_change(planted) -> None:  # type: ignore[no-untyped-def]
    body = _get(planted, comparison="release")
    f = _finding(body, "steady", "score:correct")
    assert f["flagged"] is False and f["verdict"] == "no_change", f
    assert f["current"]["value"] == pytest.approx(0.88)
    assert not any(x["flagged"] for x in body["findings"] if x["agent"] == "steady"), body


def test_numeric_score_drop_is_found_by_mann_whitney(planted) -> None:  # type: ignore[no-untyped-def]
    body = _get(planted, comparison="release")
    f = _finding(body, "dropped", "score:helpfulness")
    assert f["test"] == "mann_whitney_u" and f["verdict"] == "regression", f
    assert f["current"]["value"] < f["baseline"]["value"] and f["effect_size"] < 0


def test_a_label_share_has_no_direction_until_the_label_is_named(planted) -> None:  # type: ignore[no-untyped-def]
    body = _get(planted, comparison="release")
    f = _finding(body, "dropped", "score:tone=rude")
    assert f["verdict"] == "changed" and f["flagged"] is True, f
    named = _finding(_get(planted, comparison="release", metrics="score:tone=rude"), "dropped", "score:tone=rude")
    assert named["verdict"] == "regression" and named["current"]["value"] > named["baseline"]["value"]
    assert named["test"] == "two_proportion_z"


def test_window_comparison_flags_the_same_drop(planted) -> None:  # type: ignore[no-untyped-def]
    body = _get(planted, comparison="window", window="24h", baseline="7d", metrics="score:correct")
    assert _finding(body, "dropped", "score:correct")["verdict"] == "regression"
    assert _finding(body, "steady", "score:correct")["flagged"] is False


def test_alert_rules_on_score_metrics_fire_for_the_drop_only(planted) -> None:  # type: ignore[no-untyped-def]
    check = httpx.post(planted.http_url + "/api/alerts/check", timeout=120)
    assert check.status_code == 200, check.text
    body = check.json()
    assert body["errors"] == {}
    firing: dict[str, set[str]] = {}
    for state in body["firing"]:
        firing.setdefault(state["rule"], set()).add(state["subject"])
    assert firing["correct: release"] == {"dropped"}
    assert firing["helpfulness: release"] == {"dropped"}
    # one rule over every score: each score of each agent fires on its own; a label without a named
    # direction (tone) never does
    assert firing["every score: release"] == {"dropped score:correct", "dropped score:helpfulness"}
    event = next(e for e in body["events"] if e["rule"] == "correct: release")
    assert event["kind"] == "firing" and event["evidence"]


def test_unusable_score_metrics_are_422(planted) -> None:  # type: ignore[no-untyped-def]
    for params in ({"metrics": "score:"}, {"metrics": "score:tone="}, {"comparison": "drift", "metrics": "score:*"},
                   {"comparison": "drift", "metrics": "cost_usd"}):
        r = httpx.get(planted.http_url + "/api/regressions", params=params, timeout=10)
        assert r.status_code == 422, (params, r.text)


def test_the_share_judged_false_is_a_metric_too(planted) -> None:  # type: ignore[no-untyped-def]
    body = _get(planted, comparison="release", metrics="score:correct=false")
    f = _finding(body, "dropped", "score:correct=false")
    assert f["verdict"] == "regression", f  # 10% -> 25% judged false: its share rising is worse
    assert f["baseline"]["value"] == pytest.approx(0.10) and f["current"]["value"] == pytest.approx(0.25)
    steady = _finding(body, "steady", "score:correct=false")
    assert steady["verdict"] == "no_change" and steady["current"]["value"] == pytest.approx(0.12)
