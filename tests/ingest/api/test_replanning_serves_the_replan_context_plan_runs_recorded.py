"""`GET /api/replanning` serves, per replan span, what real plan-and-execute runs recorded: the
router's decision (rule, escalation, a goal change's reset), the lessons, the variable health, the
kept/dropped/added steps, the tool calls and replanning tokens the gates looked at, and why a gate
refused; and its `routes` and `steps` totals add them up, on both stores. Runs on the scripted LLM traced by the real
tracer into a real server over OTLP/HTTP; compared with each run's own `PlanRunResult`. A store from
before these columns gets them from the stored spans when the server upgrades it."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import duckdb
import httpx
import pytest

import tracer
from ingest.config import Settings
from ingest.schema import MIGRATIONS, PLAN_SPAN_CONTEXT, PLAN_SPANS_CONTEXT_MIGRATION
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.replan_context_runs import AGENT, run_all
from tests.ingest.conftest import _ServerThread
from tracer.conventions import ReplanVerdict


@pytest.fixture(scope="module", params=BACKENDS)
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("replan-context")
    store = {"store": "clickhouse", "clickhouse_url": f"chdb://{root / 'clickhouse'}"} if request.param == "clickhouse" else {}
    settings = Settings(db=root / "s.duckdb", host="127.0.0.1", grpc_port=0, **store)
    thread = _ServerThread(settings)
    server = thread.start()
    try:
        handle = tracer.setup(service_name="replan-context", endpoint=f"{server.http_url}/v1/traces",
                              schedule_delay_ms=50)
        try:
            results = asyncio.run(run_all())
        finally:
            assert handle.shutdown(10)
        assert server.store.wait_loaded(30)
        answer = _get(server.http_url)
    finally:
        thread.stop()
    return settings, results, answer


def _get(url: str) -> dict[str, Any]:
    r = httpx.get(f"{url}/api/replanning", params={"since": "24h"}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _by_run(answer: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(answer["recent_replans"], key=lambda r: r["start_time"]):
        out.setdefault(row["trace_id"], []).append(row)
    return out


def test_each_replan_span_serves_what_the_run_recorded(loaded: Any) -> None:
    _, results, answer = loaded
    served = _by_run(answer)
    for name, result in results.items():
        rows = served[result.trace_id]
        assert len(rows) == len(result.replans), name
        for row, rec in zip(rows, result.replans, strict=True):
            assert row["agent"] == AGENT
            assert (row["from_version"], row["to_version"], row["granularity"]) == (
                rec.from_version, rec.to_version, rec.granularity), name
            assert (row["route_rule"], row["route_escalated"], bool(row["escalation_reset"])) == (
                rec.route_rule, rec.escalated, rec.escalation_reset), name
            assert row["verdict"] == (rec.verdict.value if rec.verdict else None)
            assert row["lessons"] == rec.lessons
            assert (row["variables_clean"], row["variables_stale"], row["variables_void"]) == (
                rec.variables["clean"], rec.variables["stale"], rec.variables["void"]), name
            assert (row["kept"], row["dropped"], row["added"]) == (rec.kept, rec.dropped, rec.added), name
            assert row["tool_calls"] == rec.tool_calls
            refused = rec.verdict not in (None, ReplanVerdict.ADMITTED)
            assert row["refusal"] == (rec.detail if refused else None), name


def test_goal_change_gate_and_stale_results_are_visible(loaded: Any) -> None:
    _, results, answer = loaded
    served = _by_run(answer)
    goal = served[results["goal"].trace_id]
    assert [(r["granularity"], r["route_escalated"], bool(r["escalation_reset"])) for r in goal] == [
        ("patch", False, False), ("tail", True, False), ("global", False, True), ("patch", False, False)]
    [gate] = served[results["gate"].trace_id]
    assert gate["verdict"] == "tool_call_gate" and gate["refusal"] == results["gate"].trip.detail
    [glob] = served[results["global"].trace_id]
    assert (glob["variables_void"], glob["variables_stale"]) == (1, 0)  # the fallen premise's input E1
    assert glob["dropped"] == ["E1", "E2"]


def test_routes_and_steps_add_up_the_replans(loaded: Any) -> None:
    _, results, answer = loaded
    recs = [rec for r in results.values() for rec in r.replans]
    expected = Counter((rec.route_rule, rec.granularity) for rec in recs)
    assert {(r["rule"], r["granularity"]): r["replans"] for r in answer["routes"]} == dict(expected)
    assert sum(r["escalated"] for r in answer["routes"]) == sum(rec.escalated for rec in recs)
    assert sum(r["escalation_resets"] for r in answer["routes"]) == sum(rec.escalation_reset for rec in recs)
    admitted = [rec for rec in recs if rec.verdict == ReplanVerdict.ADMITTED]
    assert answer["steps"] == {
        "kept": sum(len(x.kept) for x in admitted), "dropped": sum(len(x.dropped) for x in admitted),
        "added": sum(len(x.added) for x in admitted),
        "stale_results": sum(x.variables["stale"] for x in admitted),
        "void_results": sum(x.variables["void"] for x in admitted),
    }
    assert all(r["examples"] for r in answer["routes"])


def test_an_older_store_gets_the_columns_from_its_spans(loaded: Any) -> None:
    settings, _, fresh = loaded
    if settings.store != "duckdb":
        pytest.skip("the upgrade of a DuckDB file from before the plan_spans context columns")
    version = MIGRATIONS.index(PLAN_SPANS_CONTEXT_MIGRATION) + 1
    conn = duckdb.connect(str(settings.db))
    try:
        for column in PLAN_SPAN_CONTEXT:
            conn.execute(f"ALTER TABLE plan_spans DROP COLUMN {column}")
        conn.execute("DELETE FROM schema_migrations WHERE version >= ?", [version])
    finally:
        conn.close()
    thread = _ServerThread(settings)
    server = thread.start()
    try:
        upgraded = _get(server.http_url)
    finally:
        thread.stop()
    assert upgraded["recent_replans"] == fresh["recent_replans"]
    assert upgraded["routes"] == fresh["routes"] and upgraded["steps"] == fresh["steps"]
