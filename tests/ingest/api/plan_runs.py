"""Real plan-and-execute runs (scripted LLM, real tools from tests/kernel/plan/toolkit.py) covering every
replanning outcome the Replanning analytics count: a patch, a tail, a global replan (with its
re-execution cost), an unusable replanner reply, the token gate, the oscillation guard, and the step
breaker tripping before any replan call. Used by the ingest API and the dashboards tests."""

from __future__ import annotations

from kernel.llm import ScriptedLLM
from kernel.plan import BreakerConfig, ExecutorConfig, PlanAndExecuteAgent, PlanRunResult
from tests.kernel.plan.toolkit import World, plan_json, step

MODEL = "gpt-4o-mini"  # priced by the bundled table, so replan and run costs are not zero
AGENT = "planner"


def _llm(replies: list[str]) -> ScriptedLLM:
    return ScriptedLLM(replies, model=MODEL, provider="openai")


async def patch_run() -> PlanRunResult:
    """E1 fails (semantic): patch replaces it and its direct successor."""
    llm = _llm([
        plan_json(step("E1", "get_orders", {"customer": "ghost"}), step("E2", "sum_totals", {"rows": "#E1.rows"}),
                  answer="#E2.total"),
        plan_json(step("a", "search_orders", {"name": "ghost"}, replaces="E1"),
                  step("b", "sum_totals", {"rows": "#a.rows"}, replaces="E2"), answer="#b.total",
                  cause="unknown customer"),
    ])
    return await PlanAndExecuteAgent(AGENT, "1.0", llm, World().registry()).run("ghost's spend")


async def tail_run() -> PlanRunResult:
    """E2's output lacks an expected field (assumption): tail replaces everything not done."""
    llm = _llm([
        plan_json(step("E1", "search_orders", {"name": "acme"}),
                  step("E2", "sum_totals", {"rows": "#E1.rows"}, expect={"type": "object", "required": ["count"]}),
                  step("E3", "report", {"total": "#E2.total"}), answer="#E3"),
        plan_json(step("c", "sum_totals", {"rows": "#E1.rows"}),
                  step("d", "report", {"total": "#c.total", "customer": "acme"}), answer="#d", cause="no count field"),
    ])
    return await PlanAndExecuteAgent(AGENT, "1.0", llm, World().registry()).run("acme's spend")


async def global_run() -> PlanRunResult:
    """The premise (the data's year) falls: global replan, the $0.50 dataset load is paid again."""
    llm = _llm([
        plan_json(step("E1", "load_dataset", {"name": "sales"}),
                  step("E2", "verify_year", {"year": "#E1.year"}, premise=True)),
        plan_json(step("n", "load_dataset", {"name": "sales-2024"}), answer="#n.name", cause="old data"),
    ])
    return await PlanAndExecuteAgent(AGENT, "2.0", llm, World().registry()).run("sales")


async def unusable_then_patch_run() -> PlanRunResult:
    """The replanner's first reply is not a plan (a replan span with ERROR, no verdict); the second works."""
    llm = _llm([
        plan_json(step("E1", "get_orders", {"customer": "ghost"}), answer="#E1.rows"),
        "I would rather not.",
        plan_json(step("a", "search_orders", {"name": "ghost"}, replaces="E1"), answer="#a.rows", cause="retry"),
    ])
    agent = PlanAndExecuteAgent(AGENT, "2.0", llm, World().registry(), breakers=BreakerConfig(max_replans=5))
    return await agent.run("ghost's orders")


FOUR_STEPS = plan_json(
    step("E1", "get_orders", {"customer": "ghost"}),
    step("E2", "sum_totals", {"rows": "#E1.rows"}),
    step("E3", "report", {"total": "#E2.total"}),
    step("E4", "quote", {"symbol": "X"}),
)


async def token_gate_run() -> PlanRunResult:
    """The token gate refuses the first replan (estimated too big): replan_exhausted, refused span."""
    llm = _llm([FOUR_STEPS, plan_json(step("a", "search_orders", {"name": "ghost"}, replaces="E1"))])
    agent = PlanAndExecuteAgent(AGENT, "1.0", llm, World().registry(), breakers=BreakerConfig(max_replan_tokens=500))
    return await agent.run("spend")


async def oscillation_run() -> PlanRunResult:
    """A -> B -> A: the guard refuses the plan seen before."""
    llm = _llm([
        plan_json(step("E1", "get_orders", {"customer": "ghost"}), step("E2", "sum_totals", {"rows": "#E1.rows"}),
                  step("E3", "report", {"total": "#E2.total"}), step("E4", "quote", {"symbol": "X"})),
        plan_json(step("b1", "get_orders", {"customer": "ghost-b"}), step("b2", "sum_totals", {"rows": "#b1.rows"}),
                  cause="try the other spelling"),
        plan_json(step("z1", "get_orders", {"customer": "ghost"}), step("z2", "sum_totals", {"rows": "#z1.rows"}),
                  step("z3", "report", {"total": "#z2.total"}), cause="try the first spelling again"),
    ])
    return await PlanAndExecuteAgent(AGENT, "1.0", llm, World().registry()).run("spend")


async def breaker_without_replan_run() -> PlanRunResult:
    """A timeout with no repeat allowed: the step breaker trips while the failure is still routed to
    retry (granularity none), before any replan call, so the run has no replan span."""
    world = World(quote_timeouts=10**6)
    llm = _llm([plan_json(step("E1", "quote", {"symbol": "X"}), step("E2", "get_orders", {"customer": "a"}))])
    agent = PlanAndExecuteAgent(
        AGENT, "1.0", llm, world.registry(),
        executor=ExecutorConfig(retries=0, backoff_initial_s=0, backoff_max_s=0),
        breakers=BreakerConfig(max_same_failure=0),
    )
    return await agent.run("quote")


SCENARIOS = {
    "patch": patch_run,
    "tail": tail_run,
    "global": global_run,
    "unusable": unusable_then_patch_run,
    "token_gate": token_gate_run,
    "oscillation": oscillation_run,
    "no_span_breaker": breaker_without_replan_run,
}


async def run_all() -> dict[str, PlanRunResult]:
    return {name: await scenario() for name, scenario in SCENARIOS.items()}
