"""Each router outcome, driven through whole scripted runs with real tools and dispatch: an
environmental error stays in retry (none), a semantic one patches, an unexpected output shape
replans the tail, a fallen premise replans globally. And the rules only ever escalate."""

from __future__ import annotations

from kernel.llm import ScriptedLLM
from kernel.plan import (
    ExecutorConfig,
    FailureKind,
    FailureSignal,
    Granularity,
    PlanAndExecuteAgent,
    Router,
    RouterRules,
)
from tests.kernel.plan.toolkit import World, plan_json, step
from tracer.conventions import StopReason

NO_WAIT = ExecutorConfig(retries=2, backoff_initial_s=0, backoff_max_s=0)


def _signal(kind: FailureKind, origin: str = "E1", premise: bool = False) -> FailureSignal:
    return FailureSignal(step_id=origin, origin=origin, tool="t", action="a", version=1, kind=kind,
                         message="m", premise=premise)


def test_rule_table_and_escalation_never_goes_back() -> None:
    router = Router()
    assert router.route(_signal(FailureKind.ENVIRONMENTAL, "E9")).granularity == Granularity.NONE
    assert router.route(_signal(FailureKind.PERMISSION, "E8")).granularity == Granularity.PATCH
    assert router.route(_signal(FailureKind.MISSING_VARIABLE, "E7")).granularity == Granularity.PATCH
    assert router.route(_signal(FailureKind.ASSUMPTION, "E6")).granularity == Granularity.TAIL
    assert router.route(_signal(FailureKind.SEMANTIC, "E5", premise=True)).granularity == Granularity.GLOBAL
    assert router.route(_signal(FailureKind.GOAL_CHANGE, "goal")).granularity == Granularity.GLOBAL
    # the same failure again and again: patch, tail, global, global (never lighter)
    seen = [router.route(_signal(FailureKind.SEMANTIC)).granularity for _ in range(4)]
    assert seen == [Granularity.PATCH, Granularity.TAIL, Granularity.GLOBAL, Granularity.GLOBAL]
    # a different failure of another step starts from its own rule
    assert router.route(_signal(FailureKind.SEMANTIC, "E2")).granularity == Granularity.PATCH


def test_rules_are_overridable_by_the_caller() -> None:
    table = RouterRules().by_kind | {FailureKind.PERMISSION: Granularity.GLOBAL}
    router = Router(RouterRules(by_kind=table,
                                override=lambda s, g: Granularity.TAIL if s.tool == "special" else None))
    assert router.route(_signal(FailureKind.PERMISSION)).granularity == Granularity.GLOBAL
    special = _signal(FailureKind.SEMANTIC, "E3").model_copy(update={"tool": "special"})
    decision = router.route(special)
    assert decision.granularity == Granularity.TAIL and decision.rule == Granularity.TAIL


async def test_environmental_error_stays_in_retry_and_never_calls_the_replanner() -> None:
    world = World(quote_timeouts=3)  # 3 attempts in round one all time out; the re-run succeeds
    llm = ScriptedLLM([plan_json(step("E1", "quote", {"symbol": "X"}), answer="price #E1.price")])
    agent = PlanAndExecuteAgent("pe", "1", llm, world.registry(), executor=NO_WAIT)
    result = await agent.run("price of X")
    assert result.ok, result.error
    assert result.answer == "price 10"
    assert len(llm.calls) == 1 and result.replans == []
    assert world.called("quote") == 4
    [signal] = result.failures
    assert signal.kind == FailureKind.ENVIRONMENTAL
    assert signal.recovery == ["quote: 3 attempt(s), last timeout"]


async def test_semantic_failure_patches() -> None:
    world = World()
    llm = ScriptedLLM([
        plan_json(step("E1", "get_orders", {"customer": "ghost"}), step("E2", "sum_totals", {"rows": "#E1.rows"}),
                  answer="#E2.total"),
        plan_json(step("a", "search_orders", {"name": "ghost"}, replaces="E1"),
                  step("b", "sum_totals", {"rows": "#a.rows"}, replaces="E2"), cause="unknown customer"),
    ])
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry()).run("spend of ghost")
    assert result.ok, result.error
    assert [r.granularity for r in result.replans] == ["patch"]
    assert result.replans[0].cause == "semantic:exception"
    assert result.answer == "5"


async def test_unexpected_output_shape_replans_the_tail() -> None:
    world = World()
    llm = ScriptedLLM([
        plan_json(step("E1", "get_orders", {"customer": "acme"}, expect={"type": "object", "required": ["customers"]}),
                  step("E2", "sum_totals", {"rows": "#E1.rows"}), answer="#E2.total"),
        plan_json(step("x", "search_orders", {"name": "acme"}), step("y", "sum_totals", {"rows": "#x.rows"}),
                  answer="#y.total", cause="no customers key"),
    ])
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry()).run("spend of acme")
    assert result.ok, result.error
    assert result.failures[0].kind == FailureKind.ASSUMPTION
    assert result.failures[0].evidence == {"expected": "required: ['customers']", "path": "(output)"}
    assert [r.granularity for r in result.replans] == ["tail"]
    assert result.replans[0].dropped == ["E1", "E2"]
    assert result.answer == "5"


async def test_fallen_premise_replans_globally() -> None:
    world = World()
    llm = ScriptedLLM([
        plan_json(step("E1", "load_dataset", {"name": "sales"}),
                  step("E2", "verify_year", {"year": "#E1.year"}, premise=True),
                  step("E3", "sum_totals", {"rows": [{"total": 1}]}), answer="#E3.total"),
        plan_json(step("n", "load_dataset", {"name": "sales-2024"}), step("m", "report", {"total": 3}),
                  answer="#m", cause="2019 data"),
    ])
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry()).run("total sales 2024")
    assert result.ok, result.error
    assert [r.granularity for r in result.replans] == ["global"]
    assert result.answer == " spent 3"
    assert result.stop_reason == StopReason.FINISH
