"""Loads a real server with real agent runs: the kernel, traced by the tracer, exporting real
OTLP/HTTP to the server under test. What the dashboards then show is what a user would see.

The runs cover what the pages must present: a clean finish, a truncated observation, a tool that
keeps failing (tool_error_exhausted), two versions of one agent for Compare, budgets.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.llm import ScriptedLLM
from kernel.tools import tool
from tracer.provider import setup


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def dump_listing(n: int) -> str:
    """The `dump` tool's output (tests compute what truncating it must drop from the same text)."""
    return "\n".join(f"line {i}: " + "x" * 60 for i in range(n))


@tool
async def dump(n: int) -> str:
    """Return a long listing."""
    return dump_listing(n)


@tool
async def flaky(q: str) -> str:
    """Always fails."""
    raise RuntimeError(f"backend 500 for {q}")


def act(name: str, **args: object) -> str:
    return f"Thought: I should use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


@dataclass
class Loaded:
    ok_v1: str = ""
    ok_v2: str = ""
    truncated: str = ""
    failed: str = ""
    all: list[str] = field(default_factory=list)


async def _runs() -> Loaded:
    out = Loaded()
    budget = Budget(max_steps=6, max_input_tokens=50_000, max_cost_usd=1.0, max_consecutive_errors=2)
    r = await Agent("calc", "1.0", ScriptedLLM([act("add", a=2, b=3), "Thought: done\nFinal Answer: 5"],
                                               model="gpt-4o-mini"), [add], budget=budget).run("2+3?")
    out.ok_v1 = r.trace_id
    r = await Agent("calc", "2.0", ScriptedLLM([act("add", a=2, b=4), act("add", a=6, b=0),
                                                "Thought: done\nFinal Answer: 6"], model="gpt-4o-mini"),
                    [add], budget=budget).run("2+3?")
    out.ok_v2 = r.trace_id
    r = await Agent("lister", "1.0", ScriptedLLM([act("dump", n=400), "Thought: enough\nFinal Answer: listed"],
                                                 model="gpt-4o"), [dump], budget=budget,
                    observation_max_tokens=60).run("list everything")
    out.truncated = r.trace_id
    r = await Agent("fetcher", "1.0", ScriptedLLM([act("flaky", q="a"), act("flaky", q="b"), act("flaky", q="c")],
                                                  model="gpt-4o-mini"), [flaky], budget=budget).run("fetch")
    out.failed = r.trace_id
    out.all = [out.ok_v1, out.ok_v2, out.truncated, out.failed]
    return out


def load_agent_runs(http_url: str, store: object) -> Loaded:
    """Run the agents with tracing on into the server at `http_url`; wait until queryable."""
    handle = setup(service_name="dash-tests", environment="test", endpoint=f"{http_url}/v1/traces",
                   capture_content=True, schedule_delay_ms=50)
    try:
        loaded = asyncio.run(_runs())
    finally:
        assert handle.shutdown(10), "the tracer could not flush its spans to the test server"
    assert all(loaded.all), f"a run has no trace id (tracing off?): {loaded}"
    assert store.wait_loaded(30), "spans acknowledged but not loaded within 30 s"  # type: ignore[attr-defined]
    return loaded
