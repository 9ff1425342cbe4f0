"""Real agent runs for evaluator tests: the kernel on a scripted model with real tools, traced by the
tracer, exported over OTLP/HTTP into the server under test. What the evaluators then judge is what
they would judge in production (task and answer on the run span, steps, tool spans with errors).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.llm import ScriptedLLM
from kernel.tools import tool
from tests.support.scripted_runs import act, add, fail, final
from tracer.provider import setup

__all__ = ["AgentRun", "act", "add", "fail", "final", "run_agents", "wait_for", "lookup", "refund"]


@tool
async def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


@tool
async def refund(order: str) -> str:
    """Refund an order (a tool the evaluators forbid)."""
    return f"refunded {order}"


@dataclass(frozen=True)
class AgentRun:
    """One scripted run: the model's replies in order, the task, the agent's name and version."""

    replies: list[str]
    task: str = "What is 2+3?"
    agent: str = "calc"
    version: str = "1.0"


def run_agents(base_url: str, runs: list[AgentRun], api_key: str | None = None) -> list[str]:
    """Run each agent (traced into `base_url`), flush, and return their trace ids in order."""
    headers = {"x-api-key": api_key} if api_key else None
    handle = setup(endpoint=base_url + "/v1/traces", headers=headers, service_name="evaluator-test-agent",
                   capture_content=True, schedule_delay_ms=50)
    try:
        async def go() -> list[str]:
            out = []
            for spec in runs:
                agent = Agent(spec.agent, spec.version, ScriptedLLM(list(spec.replies), model="gpt-4o-mini"),
                              [add, fail, lookup, refund], budget=Budget(max_steps=6, max_consecutive_errors=3))
                result = await agent.run(spec.task)
                assert result.trace_id, "tracing is on: every run has a trace id"
                out.append(result.trace_id)
            return out

        trace_ids = asyncio.run(go())
        assert handle.force_flush(10)
    finally:
        handle.shutdown(10)
    return trace_ids


def wait_for(check: Callable[[], Any], timeout: float = 60.0, every: float = 0.2) -> Any:
    """Poll `check` until it returns something truthy; its last value, or AssertionError at the timeout."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"not reached within {timeout:g} s; last value {value!r}")


def scores_of(base_url: str, key: str | None = None, **params: Any) -> list[dict[str, Any]]:
    headers = {"x-api-key": key} if key else {}
    r = httpx.get(base_url + "/api/scores", params={"limit": 1000, **params}, headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["scores"]


def evaluators_of(base_url: str, key: str | None = None, **params: Any) -> dict[str, dict[str, Any]]:
    headers = {"x-api-key": key} if key else {}
    r = httpx.get(base_url + "/api/evaluators", params=params, headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    return {e["rule"]["name"]: e for e in r.json()["evaluators"]}


def json_answer(value: Any) -> str:
    return final(json.dumps(value))
