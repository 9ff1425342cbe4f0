"""A/A test: one stable population, split at random 50 times, yields at most one flagged finding
in total across every metric checked (steps, tokens, cost, duration, tool errors, failure rate,
each stop reason). This is what "tells a real shift from noise" means: the relative-change floor,
the minimum sample size and the Holm correction (family-wise error 0.002 per report) together keep
chance out. One seed proves little: bench/regression_sim.py runs this over hundreds of seeds.

The population goes in as real OTLP through the real server; the splits are made over the runs as
stored (read back with the same query the API uses). One split is also labelled as two versions
at send time and checked end to end through `GET /api/regressions?comparison=release`. On each
store (DuckDB and ClickHouse): the samples are read with the store's own queries.
"""

from __future__ import annotations

from datetime import timedelta

import httpx
import numpy as np
import pytest

from ingest.analytics.compare import runs_by_agent
from ingest.analytics.findings import Pair, RegressionConfig, RunSet, build_findings
from ingest.queries.filters import CommonFilters
from ingest.store.backend import queries_of
from tests.ingest.analytics.synthetic import now_utc, population, send, spread
from tests.ingest.api.harness import BACKENDS

POPULATION = 1000
SPLITS = 50


def _subset(runs: RunSet, idx: np.ndarray) -> RunSet:
    return RunSet(
        trace_ids=[runs.trace_ids[i] for i in idx],
        values={k: v[idx] for k, v in runs.values.items()},
        ok=[runs.ok[i] for i in idx],
        stop_reasons=[runs.stop_reasons[i] for i in idx],
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_fifty_random_splits_of_a_stable_population_flag_at_most_one_finding(start_ingest_server, backend: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    now = now_utc()
    starts = spread(now - timedelta(days=7), now - timedelta(minutes=1), POPULATION, rng)
    runs = population(rng, POPULATION, "stable_agent", "a", starts)
    for run in runs[POPULATION // 2:]:
        run.version = "b"  # a random half (runs are i.i.d.), for the end-to-end release check
    srv = start_ingest_server(grpc_port=0, store=backend)
    send(srv.http_url, srv.store, runs)

    r = httpx.get(srv.http_url + "/api/regressions", params={"comparison": "release"}, timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    checked = {f["metric"] for f in body["findings"]}
    assert {"steps", "input_tokens", "cost_usd", "duration_ms", "tool_errors", "failure_rate",
            "stop_reason:timeout", "stop_reason:max_steps"} <= checked
    assert all(f["verdict"] != "insufficient_data" for f in body["findings"] if f["metric"] == "steps")
    flagged_api = [f for f in body["findings"] if f["flagged"]]

    with srv.store.read() as cur:
        stored = runs_by_agent(cur, CommonFilters(), queries=queries_of(srv.store))["stable_agent"]
    assert len(stored) == POPULATION

    config = RegressionConfig()
    flagged = list(flagged_api)
    tested = 0
    for _ in range(SPLITS - 1):
        perm = rng.permutation(POPULATION)
        pair = Pair("stable_agent", _subset(stored, perm[: POPULATION // 2]), _subset(stored, perm[POPULATION // 2:]),
                    "A", "B")
        findings = build_findings([pair], "release", config)
        tested += sum(f.p_value is not None for f in findings)
        flagged += [f for f in findings if f.flagged]
    assert tested >= (SPLITS - 1) * 8  # every split really tested the metrics
    assert len(flagged) <= 1, [f if isinstance(f, dict) else (f.metric, f.relative_change, f.q_value) for f in flagged]
