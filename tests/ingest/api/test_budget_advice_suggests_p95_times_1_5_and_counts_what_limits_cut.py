"""GET /api/budget-advice on a real ingest server: per agent, P95 x 1.5 of steps and tokens (rounded
up) and of cost, the current limit the latest run span recorded (real kernel runs) or, where no span
recorded one (a foreign client's runs), the request's parameter, and exactly how many runs that
limit would have cut and how many it already ended. Bad limits are 422."""

from __future__ import annotations

import math

import httpx
import numpy as np
import pytest

import tracer
from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.llm import ScriptedLLM
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import Emitter, RunSpec
from tests.support.scripted_runs import act, add, final

KERNEL_STEPS = [1, 2, 3, 4, 2, 1, 3]  # finishing runs; then one cut by max_steps=4, then the latest (2 steps)


def _p95(values: list[float]) -> float:
    return float(np.quantile(np.array(values, dtype=float), 0.95))  # linear, as DuckDB's quantile_cont


def _limits(body: dict, agent: str) -> dict[str, dict]:
    [entry] = [a for a in body["agents"] if a["agent"] == agent]
    return {x["limit"]: x for x in entry["limits"]} | {"_runs": entry["runs"]}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_advice_from_recorded_limits_and_from_parameters(start_ingest_server, backend: str) -> None:
    ingest_server = start_ingest_server(store=backend)
    handle = tracer.setup(service_name="advice-tests", endpoint=f"{ingest_server.http_url}/v1/traces",
                          schedule_delay_ms=50)
    results = []
    try:
        for n in KERNEL_STEPS:
            script = [act("add", a=i, b=1) for i in range(n - 1)] + [final("done")]
            agent = Agent("desk", "1", ScriptedLLM(script), [add], budget=Budget(max_steps=4, max_input_tokens=10**6))
            results.append(await agent.run("t"))
        capped = Agent("desk", "1", ScriptedLLM([act("add", a=i, b=1) for i in range(5)]), [add],
                       budget=Budget(max_steps=4, max_input_tokens=10**6))
        results.append(await capped.run("t"))
        latest = Agent("desk", "1", ScriptedLLM([act("add", a=9, b=1), final("done")]), [add],
                       budget=Budget(max_steps=2, max_input_tokens=10**6))
        results.append(await latest.run("t"))
    finally:
        assert handle.shutdown(10), "the tracer could not flush its spans to the test server"
    assert [len(r.steps) for r in results] == [*KERNEL_STEPS, 4, 2]
    assert results[-2].stop_reason == "max_steps"

    emitter = Emitter()
    legacy = [emitter.run(RunSpec(agent="legacy", steps=s, cost_per_step=0.01)) for s in (1, 2, 2, 5, 8, 3)]
    ingest_server_send(ingest_server, emitter)
    assert ingest_server.store.wait_loaded(30)

    with httpx.Client(base_url=ingest_server.http_url, timeout=30) as client:
        r = client.get("/api/budget-advice", params={"max_steps": 3, "max_cost_usd": 0.045})
        assert r.status_code == 200, r.text
        body = r.json()
        bad = [client.get("/api/budget-advice", params={"max_steps": -1}),
               client.get("/api/budget-advice", params={"max_cost_usd": "a lot"}),
               client.get("/api/budget-advice", params={"max_seconds": "inf"})]
    assert all(b.status_code == 422 for b in bad), [b.text for b in bad]
    assert (body["percentile"], body["headroom"]) == (0.95, 1.5)
    assert [a["agent"] for a in body["agents"]] == ["desk", "legacy"]  # most runs first

    desk = _limits(body, "desk")
    steps = [len(r.steps) for r in results]
    assert desk["_runs"] == 9
    s = desk["max_steps"]
    assert s["measured_runs"] == 9 and s["p95"] == pytest.approx(_p95(steps))
    assert s["suggested"] == math.ceil(_p95(steps) * 1.5)
    # the latest run span recorded max_steps=2: it wins over the parameter (3)
    assert (s["current"], s["current_source"]) == (2, "recorded")
    assert s["would_cut"] == sum(n > 2 for n in steps) == 4
    assert s["stopped_by"] == 1
    tokens = [r.usage.input_tokens for r in results]
    t = desk["max_input_tokens"]
    assert t["p95"] == pytest.approx(_p95(tokens)) and t["suggested"] == math.ceil(_p95(tokens) * 1.5)
    assert (t["current"], t["current_source"], t["would_cut"]) == (10**6, "recorded", 0)
    out = desk["max_output_tokens"]
    assert out["current"] is None and out["would_cut"] is None  # no recorded limit, no parameter
    cost = desk["max_cost_usd"]
    assert (cost["current"], cost["current_source"]) == (0.045, "parameter")  # not recorded by the span

    old = _limits(body, "legacy")
    s = old["max_steps"]
    legacy_steps = [x.steps for x in legacy]
    assert s["p95"] == pytest.approx(_p95(legacy_steps)) and s["suggested"] == math.ceil(_p95(legacy_steps) * 1.5)
    assert (s["current"], s["current_source"]) == (3, "parameter")
    assert s["would_cut"] == sum(n > 3 for n in legacy_steps) == 2 and s["stopped_by"] == 0
    c = old["max_cost_usd"]
    costs = [x.cost_usd for x in legacy]
    assert c["p95"] == pytest.approx(_p95(costs)) and c["suggested"] == pytest.approx(_p95(costs) * 1.5)
    assert c["would_cut"] == sum(x > 0.045 for x in costs) == 2


def ingest_server_send(server, emitter: Emitter) -> None:  # type: ignore[no-untyped-def]
    """POST the emitter's runs as OTLP/HTTP protobuf to the running server."""
    r = httpx.post(f"{server.http_url}/v1/traces", content=emitter.request().SerializeToString(),
                   headers={"Content-Type": "application/x-protobuf"}, timeout=30)
    assert r.status_code == 200, r.text
