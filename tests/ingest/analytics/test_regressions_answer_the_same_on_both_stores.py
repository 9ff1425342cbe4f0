"""`GET /api/regressions` answers the same on ClickHouse as on DuckDB: the same OTLP bytes (two
versions of one agent with a planted +40% steps, a steady agent, a gray release whose candidate
takes more steps) and the same scores (a boolean and a numeric judgment) go to a real server on each
store, and every comparison (release, window, drift of steps and of a score, cohort, score metrics)
returns the same findings: verdicts, sample sizes, values, intervals, p-values and evidence traces."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import httpx
import numpy as np
import pytest

from ingest.config import Settings
from tests.ingest.analytics.synthetic import encode, now_utc, population, spread, store_overrides
from tests.ingest.api.harness import BACKENDS
from tests.ingest.conftest import _ServerThread
from tests.support.scores_http import post_scores, run_trace_ids

PER_SIDE = 150


def _runs(rng: np.random.Generator, now):  # type: ignore[no-untyped-def]
    old = spread(now - timedelta(days=8), now - timedelta(days=1, minutes=5), PER_SIDE, rng)
    new = spread(now - timedelta(hours=23), now - timedelta(minutes=5), PER_SIDE, rng)
    runs = population(rng, PER_SIDE, "shifted", "1", old) + population(rng, PER_SIDE, "shifted", "2", new, 1.4)
    runs += population(rng, PER_SIDE, "steady", "1", old) + population(rng, PER_SIDE, "steady", "2", new)
    week = spread(now - timedelta(days=6), now - timedelta(minutes=5), 2 * PER_SIDE, rng)
    stable = population(rng, PER_SIDE, "gray", "1", week[::2])
    candidate = population(rng, PER_SIDE, "gray", "2", week[1::2], step_scale=1.25)
    for run in stable:
        run.release = ("gray-v2", "stable")
    for run in candidate:
        run.release = ("gray-v2", "candidate")
    return runs + stable + candidate


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    rng = np.random.default_rng(31)
    now = now_utc().replace(microsecond=0)
    runs = _runs(rng, now)
    bodies = [encode(runs[i:i + 300]) for i in range(0, len(runs), 300)]  # the same bytes to both stores
    queries = {
        "release": {"comparison": "release"},
        "release scores": {"comparison": "release", "metrics": "score:*"},
        "window": {"comparison": "window", "window": "24h", "baseline": "7d"},
        "drift steps": {"comparison": "drift", "since": (now - timedelta(days=8)).isoformat(), "bucket": "1d",
                        "reference_buckets": 3},
        "drift score": {"comparison": "drift", "since": (now - timedelta(days=8)).isoformat(), "bucket": "1d",
                        "reference_buckets": 3, "metrics": "score:helpfulness"},
        "cohort": {"comparison": "cohort"},
        "cohort one release": {"comparison": "cohort", "release": "gray-v2", "metrics": "steps,failure_rate"},
    }
    out: dict[str, dict[str, Any]] = {}
    scores: list[dict[str, Any]] | None = None
    for backend in BACKENDS:
        root = tmp_path_factory.mktemp(f"same-{backend}")
        thread = _ServerThread(Settings(db=root / "s.duckdb", host="127.0.0.1", grpc_port=0, normalize_processes=0,
                                        alerts_defaults=False, **store_overrides(backend, root)))
        srv = thread.start()
        try:
            for body in bodies:
                r = httpx.post(srv.http_url + "/v1/traces", content=body,
                               headers={"Content-Type": "application/x-protobuf"}, timeout=30)
                assert r.status_code == 200, r.text
            assert srv.store.wait_loaded(60)
            if scores is None:  # judged once, from the first store's trace ids (the same traces on both)
                scores = []
                for version, p_true in (("1", 0.9), ("2", 0.7)):
                    for i, trace_id in enumerate(sorted(run_trace_ids(srv.http_url, agent="shifted", version=version))):
                        scores.append({"trace_id": trace_id, "name": "correct", "value": bool(rng.random() < p_true),
                                       "score_id": f"c-{trace_id}"})
                        scores.append({"trace_id": trace_id, "name": "helpfulness", "value": float(i % 5) / 4,
                                       "score_id": f"h-{trace_id}"})
            post_scores(srv.http_url, scores, srv.store)
            out[backend] = {}
            for name, params in queries.items():
                r = httpx.get(srv.http_url + "/api/regressions", params={**params, "at": now.replace(tzinfo=None).isoformat()}, timeout=60)
                assert r.status_code == 200, (backend, name, r.text)
                out[backend][name] = r.json()
        finally:
            thread.stop()
    return out


def _rounded(value: Any) -> Any:
    """Floats to 9 significant digits (a mean summed in another order differs in the last bits)."""
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, float) and math.isfinite(value) and value != 0:
        return round(value, 8 - int(math.floor(math.log10(abs(value)))))
    return value


@pytest.mark.parametrize("name", ["release", "release scores", "window", "drift steps", "drift score", "cohort",
                                  "cohort one release"])
def test_clickhouse_answers_as_duckdb(answers, name: str) -> None:  # type: ignore[no-untyped-def]
    duck, ch = answers["duckdb"][name], answers["clickhouse"][name]
    assert _rounded(ch) == _rounded(duck)
    assert duck["findings"] or duck["drift"]  # the comparison had something to compare


def test_the_planted_shifts_are_what_both_flag(answers) -> None:  # type: ignore[no-untyped-def]
    for backend in BACKENDS:
        release = answers[backend]["release"]["findings"]
        assert {(f["agent"], f["metric"]) for f in release if f["verdict"] == "regression"} >= {("shifted", "steps")}
        assert not [f for f in release if f["agent"] == "steady" and f["flagged"]]
        cohort = answers[backend]["cohort"]["findings"]
        assert [f["verdict"] for f in cohort if f["agent"] == "gray" and f["metric"] == "steps"] == ["regression"]
        scored = answers[backend]["release scores"]["findings"]
        assert [f["verdict"] for f in scored if f["metric"] == "score:correct"] == ["regression"]
