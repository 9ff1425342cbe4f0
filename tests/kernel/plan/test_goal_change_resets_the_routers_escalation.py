"""A goal change clears the router's escalation memory: the same step lineage failing again after
the change is routed at its rule's granularity (patch), not one level above the last one used for
the old goal. The replan spans and records say so (`route_rule`, `escalated`, `escalation_reset`)."""

from __future__ import annotations

from kernel.llm import ScriptedLLM
from kernel.plan import BreakerConfig, FailureKind, FailureSignal, PlanAndExecuteAgent, Router
from kernel.plan.router import Granularity
from tests.kernel.plan.toolkit import World, plan_json, step


def _signal() -> FailureSignal:
    return FailureSignal(step_id="E1", origin="E1", tool="get_orders", action="", version=1,
                         kind=FailureKind.SEMANTIC, message="no such customer")


def test_router_forgets_escalation_on_reset() -> None:
    router = Router()
    assert router.route(_signal()).granularity == Granularity.PATCH
    again = router.route(_signal())
    assert (again.granularity, again.escalated) == (Granularity.TAIL, True)
    assert router.reset() == 1
    fresh = router.route(_signal())
    assert (fresh.granularity, fresh.rule, fresh.escalated) == (Granularity.PATCH, Granularity.PATCH, False)


async def test_same_failure_after_a_goal_change_is_routed_afresh() -> None:
    world = World()
    llm = ScriptedLLM([
        plan_json(step("E1", "get_orders", {"customer": "ghost one"})),
        # patch: the same lineage fails again -> escalated to tail
        plan_json(step("a", "get_orders", {"customer": "ghost two"}, replaces="E1"), cause="another name"),
        # tail: the report runs (and the caller changes the goal meanwhile), the lookup waits for it
        plan_json(step("r", "report", {"total": 1}), step("g", "get_orders", {"customer": "ghost three"},
                                                           depends_on=["r"]), cause="report first"),
        # global toward the new goal: get_orders inherits the lineage and fails again
        plan_json(step("n", "get_orders", {"customer": "ghost four"}), cause="new goal"),
        # that failure is routed at its rule (patch), not global
        plan_json(step("s", "search_orders", {"name": "ghost"}, replaces="E1"), answer="#s.rows", cause="search"),
    ])
    world.change_goal_to = "Only list the orders."
    agent = PlanAndExecuteAgent("pe", "1", llm, world.registry(),
                                breakers=BreakerConfig(max_replans=10, normalise_literals=False))
    result = await agent.run("ghost's spend", inbox=world.inbox)
    assert result.ok, result.error
    got = [(r.granularity, r.route_rule, r.escalated, r.escalation_reset, r.cause) for r in result.replans]
    assert got == [
        ("patch", "patch", False, False, "semantic:exception"),
        ("tail", "patch", True, False, "semantic:exception"),
        ("global", "global", False, True, "goal_change"),
        ("patch", "patch", False, False, "semantic:exception"),  # without the reset: global, escalated
    ]
    assert result.goal_changes == ["Only list the orders."]
    assert {f.origin for f in result.failures} == {"E1"}  # one lineage throughout
