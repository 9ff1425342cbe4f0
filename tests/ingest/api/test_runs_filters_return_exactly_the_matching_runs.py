"""Each filter of GET /api/runs returns exactly the runs that match it, checked against what was sent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.ingest.api.harness import BACKENDS, start_server, stop_server
from tests.ingest.api.otlp_runs import T0, Emitter, RunSpec
from tracer.conventions import StopReason


@pytest.fixture(scope="module", params=BACKENDS)
def world(tmp_path_factory, request):
    """One server for the module (read-only tests): runs of two services/environments."""
    server, stack, thread = start_server(tmp_path_factory.mktemp("filters"), [], 10.0, request.param)
    prod, staging = Emitter(environment="prod"), Emitter(service="other", environment="staging")
    now = datetime.now(UTC)
    specs = {
        "ok_old": prod.run(RunSpec(start=T0, agent="billing", version="1.0", user="u1", conversation="c1")),
        "maxsteps": prod.run(
            RunSpec(start=T0 + timedelta(hours=1), ok=False, stop_reason=StopReason.MAX_STEPS, steps=5, failing_tools=2)
        ),
        "budget": prod.run(
            RunSpec(
                start=T0 + timedelta(hours=2), ok=False, stop_reason=StopReason.COST_BUDGET, model="gpt-4.1",
                cost_per_step=0.5, user="u2",
            )
        ),
        "recent": prod.run(RunSpec(start=now - timedelta(hours=1), agent="billing", version="2.0", steps=1)),
        "staging": staging.run(RunSpec(start=T0 + timedelta(hours=3), name="nightly_report_50%_done", steps=3)),
    }
    server.send(prod.request())
    server.send(staging.request())
    yield server, specs
    stop_server(server, stack, thread)


def _ids(server, **params) -> set[str]:
    r = server.get("/api/runs", **params)
    assert r.status_code == 200, r.text
    return {run["trace_id"] for run in r.json()["runs"]}


def _want(specs, *names) -> set[str]:
    return {specs[n].trace_id for n in names}


def test_filters_select_exactly_the_matching_runs(world):
    server, s = world
    cases = {
        (("ok", "true"),): ("ok_old", "recent", "staging"),
        (("ok", "false"),): ("maxsteps", "budget"),
        (("stop_reason", "max_steps"),): ("maxsteps",),
        (("agent", "billing"),): ("ok_old", "recent"),
        (("agent", "billing"), ("version", "2.0")): ("recent",),
        (("environment", "staging"),): ("staging",),
        (("model", "gpt-4.1"),): ("budget",),
        (("user", "u1"),): ("ok_old",),
        (("conversation", "c1"),): ("ok_old",),
        (("min_cost", "0.5"),): ("budget",),
        (("min_steps", "3"),): ("maxsteps", "staging"),
        (("q", "NIGHTLY"),): ("staging",),
        (("q", "50%"),): ("staging",),
        (("q", "bill"),): ("ok_old", "recent"),
        (("since", "2h"),): ("recent",),
        (("until", "2025-03-01T13:30:00Z"),): ("ok_old", "maxsteps"),
        (("since", "2025-03-01T13:00:00+01:00"), ("until", "2025-03-01T15:00:00")): ("ok_old", "maxsteps", "budget"),
        (("project", "default"),): ("ok_old", "maxsteps", "budget", "recent", "staging"),
        (("project", "nope"),): (),
    }
    for params, names in cases.items():
        assert _ids(server, **dict(params)) == _want(s, *names), params


def test_run_fields_equal_what_was_sent(world):
    server, s = world
    spec = s["maxsteps"]
    [run] = server.get("/api/runs", stop_reason="max_steps").json()["runs"]
    assert run["trace_id"] == spec.trace_id
    assert run["project"] == "default"
    assert (run["agent"], run["version"]) == (spec.agent, spec.version)
    assert run["ok"] is False and run["stop_reason"] == "max_steps"
    assert run["steps"] == 5 and run["llm_calls"] == 5 and run["tool_calls"] == 5 and run["tool_errors"] == 2
    assert (run["input_tokens"], run["output_tokens"]) == (spec.input_tokens, spec.output_tokens)
    assert run["cost_usd"] == pytest.approx(spec.cost_usd)
    assert run["models"] == ["gpt-4o-mini"]
    assert datetime.fromisoformat(run["start_time"]) == spec.start
    assert run["duration_ms"] == pytest.approx(spec.duration_ms)
    assert run["environment"] == "prod"


@pytest.mark.parametrize(
    "params, needle",
    [
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"since": "yesterday"}, "ISO 8601"),
        ({"since": "2025-03-02", "until": "2025-03-01"}, "before"),
        ({"sort": "name"}, "sort"),
        ({"order": "sideways"}, "order"),
        ({"ok": "maybe"}, "ok"),
        ({"min_cost": -1}, "min_cost"),
        ({"stop-reason": "finish"}, "stop-reason"),
    ],
)
def test_bad_parameters_get_422_naming_the_problem(world, params, needle):
    server, _ = world
    r = server.get("/api/runs", **params)
    assert r.status_code == 422, r.text
    assert needle in r.text
