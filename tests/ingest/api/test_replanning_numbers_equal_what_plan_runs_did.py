"""`GET /api/replanning` counts exactly what real plan-and-execute runs did.

Seven runs (tests/ingest/api/plan_runs.py: patch, tail, global, an unusable reply then a patch, the
token gate, the oscillation guard, the step breaker before any replan call) are traced by the real
tracer into the real server over OTLP/HTTP; every number of the answer is compared with the runs'
own `PlanRunResult` (replan records, plan versions, costs), never with constants copied from the API.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from typing import Any

import httpx
import pytest

import tracer
from kernel.plan import PlanRunResult
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.plan_runs import MODEL, run_all
from tracer.conventions import ReplanVerdict, StopReason
from tracer.pricing import cost_usd

ADMITTED = ReplanVerdict.ADMITTED


@pytest.fixture(scope="module", params=BACKENDS)
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from ingest.config import Settings
    from tests.ingest.conftest import _ServerThread

    root = tmp_path_factory.mktemp("replan")
    store = {"store": "clickhouse", "clickhouse_url": f"chdb://{root / 'clickhouse'}"} if request.param == "clickhouse" else {}
    thread = _ServerThread(Settings(db=root / "s.duckdb", host="127.0.0.1", grpc_port=0, **store))
    server = thread.start()
    try:
        handle = tracer.setup(service_name="replan-tests", endpoint=f"{server.http_url}/v1/traces",
                              schedule_delay_ms=50)
        try:
            results = asyncio.run(run_all())
        finally:
            assert handle.shutdown(10), "the tracer could not flush its spans to the test server"
        assert server.store.wait_loaded(30)
        yield server, results
    finally:
        thread.stop()


def _get(url: str, **params: str) -> dict[str, Any]:
    r = httpx.get(f"{url}/api/replanning", params=params, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _replan_cost(rec: Any) -> float:
    return cost_usd(MODEL, rec.input_tokens, rec.output_tokens) or 0.0 if rec.input_tokens else 0.0


def _expected_groups(results: dict[str, PlanRunResult], key: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(float))
    runs: dict[str, set[str]] = defaultdict(set)
    for r in results.values():
        for rec in r.replans:
            g = out[getattr(rec, key)]
            g["replans"] += 1
            g["admitted"] += rec.verdict == ADMITTED
            g["refused"] += rec.verdict not in (None, ADMITTED)
            g["unusable"] += rec.verdict is None
            g["llm_calls"] += 1 if rec.input_tokens else 0
            g["input_tokens"] += rec.input_tokens
            g["output_tokens"] += rec.output_tokens
            g["llm_cost_usd"] += _replan_cost(rec)
            g["reexecution_cost_usd"] += (rec.reexecution_cost_usd or 0.0) if rec.verdict == ADMITTED else 0.0
            runs[getattr(rec, key)].add(r.trace_id)
    for k, g in out.items():
        g["runs"] = len(runs[k])
    return out


def _check_groups(rows: list[dict[str, Any]], expected: dict[str, dict[str, Any]]) -> None:
    assert {row["key"] for row in rows} == set(expected)
    for row in rows:
        exp = expected[row["key"]]
        for field in ("replans", "admitted", "refused", "unusable", "runs", "llm_calls", "input_tokens", "output_tokens"):
            assert row[field] == exp[field], (row["key"], field)
        assert row["llm_cost_usd"] == pytest.approx(exp["llm_cost_usd"], abs=1e-9), row["key"]
        assert row["reexecution_cost_usd"] == pytest.approx(exp["reexecution_cost_usd"], abs=1e-9), row["key"]
        assert 1 <= len(row["examples"]) <= 3


def test_replans_by_granularity_and_cause(loaded: Any) -> None:
    server, results = loaded
    body = _get(server.http_url)
    expected = _expected_groups(results, "granularity")
    assert set(expected) == {"patch", "tail", "global"}  # the scenarios really did each
    _check_groups(body["by_granularity"], expected)
    _check_groups(body["by_cause"], _expected_groups(results, "cause"))
    records = [rec for r in results.values() for rec in r.replans]
    assert body["replans"] == len(records) == 8
    assert body["admitted"] == sum(rec.verdict == ADMITTED for rec in records) == 5
    assert body["unusable"] == sum(rec.verdict is None for rec in records) == 1
    assert body["refused"] == 2
    # examples of a row are runs that did that kind of replan
    by_granularity = {row["key"]: row for row in body["by_granularity"]}
    assert by_granularity["global"]["examples"] == [results["global"].trace_id]
    assert set(by_granularity["tail"]["examples"]) == {
        r.trace_id for r in results.values() if any(rec.granularity == "tail" for rec in r.replans)}


def test_trips_exhausted_runs_and_oscillations(loaded: Any) -> None:
    server, results = loaded
    body = _get(server.http_url)
    refused = Counter(rec.verdict.value for r in results.values() for rec in r.replans
                      if rec.verdict not in (None, ADMITTED))
    assert refused == {"token_gate": 1, "oscillation": 1}
    assert {row["verdict"]: row["trips"] for row in body["trips"]} == refused
    trips = {row["verdict"]: row for row in body["trips"]}
    assert trips["token_gate"]["examples"] == [results["token_gate"].trace_id]
    assert body["oscillations"] == 1
    assert body["oscillation_examples"] == [results["oscillation"].trace_id]

    exhausted = [r for r in results.values() if r.stop_reason == StopReason.REPLAN_EXHAUSTED]
    assert body["exhausted"]["runs"] == len(exhausted) == 3
    assert set(body["exhausted"]["examples"]) == {r.trace_id for r in exhausted}
    no_span = [r for r in exhausted if not any(rec.verdict not in (None, ADMITTED) for rec in r.replans)]
    assert body["exhausted"]["without_replan_span"] == len(no_span) == 1
    assert body["exhausted"]["without_replan_span_examples"] == [results["no_span_breaker"].trace_id]


def test_plan_versions_per_run(loaded: Any) -> None:
    server, results = loaded
    body = _get(server.http_url)
    expected = Counter(len(r.plan_versions) for r in results.values())
    assert expected == {1: 2, 2: 5}
    assert {row["versions"]: row["runs"] for row in body["versions"]} == expected
    one = next(row for row in body["versions"] if row["versions"] == 1)
    assert set(one["examples"]) <= {r.trace_id for r in results.values() if len(r.plan_versions) == 1}
    assert body["plan_runs"] == len(results)
    assert body["runs_with_replans"] == sum(1 for r in results.values() if r.replans)


def test_replan_token_cost_and_reexecution_against_the_runs_total(loaded: Any) -> None:
    server, results = loaded
    cost = _get(server.http_url)["cost"]
    records = [rec for r in results.values() for rec in r.replans]
    assert cost["replan_llm_calls"] == sum(1 for rec in records if rec.input_tokens) == 7
    assert cost["replan_input_tokens"] == sum(rec.input_tokens for rec in records)
    assert cost["replan_output_tokens"] == sum(rec.output_tokens for rec in records)
    assert cost["replan_cost_usd"] == pytest.approx(sum(_replan_cost(rec) for rec in records), abs=1e-9)
    assert cost["reexecution_cost_usd"] == pytest.approx(sum(r.reexecution_cost_usd for r in results.values()))
    assert cost["reexecution_cost_usd"] == pytest.approx(0.5)  # the dataset load the global replan threw away
    runs_total = sum(r.cost_usd for r in results.values())
    assert cost["runs_cost_usd"] == pytest.approx(runs_total, abs=1e-9)
    assert cost["reexecution_share"] == pytest.approx(0.5 / runs_total)
    assert cost["replan_share"] == pytest.approx(cost["replan_cost_usd"] / runs_total)
    assert cost["plan_cost_usd"] > 0
    assert cost["examples"][0] == results["global"].trace_id  # the costliest replanning

    body = _get(server.http_url)
    top = body["runs"][0]
    assert top["trace_id"] == results["global"].trace_id
    assert top["reexecution_cost_usd"] == pytest.approx(0.5)
    assert top["run_cost_usd"] == pytest.approx(results["global"].cost_usd, abs=1e-9)
    assert {row["trace_id"] for row in body["runs"]} == {r.trace_id for r in results.values() if r.replans}


def test_common_filters_scope_every_figure(loaded: Any) -> None:
    server, results = loaded
    v2 = [r for r in results.values() if r.version == "2.0"]
    body = _get(server.http_url, version="2.0")
    assert body["plan_runs"] == len(v2) == 2
    assert body["replans"] == sum(len(r.replans) for r in v2) == 3
    assert {row["key"] for row in body["by_granularity"]} == {"global", "patch"}
    assert body["trips"] == [] and body["exhausted"]["runs"] == 0
    assert body["cost"]["runs_cost_usd"] == pytest.approx(sum(r.cost_usd for r in v2), abs=1e-9)
    empty = _get(server.http_url, agent="nobody")
    assert (empty["plan_runs"], empty["replans"], empty["by_granularity"], empty["versions"]) == (0, 0, [], [])
    assert empty["cost"]["replan_share"] is None
    bad = httpx.get(f"{server.http_url}/api/replanning", params={"granularity": "patch"}, timeout=30)
    assert bad.status_code == 422  # an unknown filter is refused, never silently ignored
