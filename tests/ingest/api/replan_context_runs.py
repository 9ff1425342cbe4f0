"""Real plan-and-execute runs whose replan spans carry the whole replan context: a goal change after
an escalation (the router's reset), a tool-call gate refusal, and the patch, global and oscillation
runs of tests/ingest/api/plan_runs.py. Used by the ingest API and the dashboards tests."""

from __future__ import annotations

from kernel.llm import ScriptedLLM
from kernel.plan import BreakerConfig, PlanAndExecuteAgent, PlanRunResult
from tests.ingest.api.plan_runs import global_run, oscillation_run, patch_run
from tests.kernel.plan.toolkit import World, plan_json, step

AGENT = "planner"


async def goal_change_run() -> PlanRunResult:
    world = World()
    world.change_goal_to = "Only list the orders."
    llm = ScriptedLLM([
        plan_json(step("E1", "get_orders", {"customer": "ghost one"})),
        plan_json(step("a", "get_orders", {"customer": "ghost two"}, replaces="E1"), cause="another name"),
        plan_json(step("r", "report", {"total": 1}),
                  step("g", "get_orders", {"customer": "ghost three"}, depends_on=["r"]), cause="report first"),
        plan_json(step("n", "get_orders", {"customer": "ghost four"}), cause="new goal"),
        plan_json(step("s", "search_orders", {"name": "ghost"}, replaces="E1"), answer="#s.rows", cause="search"),
    ])
    agent = PlanAndExecuteAgent(AGENT, "3.0", llm, world.registry(),
                                breakers=BreakerConfig(max_replans=10, normalise_literals=False))
    return await agent.run("ghost's spend", inbox=world.inbox)


async def gate_run() -> PlanRunResult:
    llm = ScriptedLLM([plan_json(step("E1", "get_orders", {"customer": "ghost"}), step("E2", "quote", {"symbol": "X"}))])
    agent = PlanAndExecuteAgent(AGENT, "3.0", llm, World().registry(), breakers=BreakerConfig(min_tool_calls=5))
    return await agent.run("spend")


async def run_all() -> dict[str, PlanRunResult]:
    return {"goal": await goal_change_run(), "gate": await gate_run(), "patch": await patch_run(),
            "global": await global_run(), "oscillation": await oscillation_run()}
