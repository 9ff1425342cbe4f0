"""Every breaker and gate ends a run that does not converge with ok=False and stop reason
`replan_exhausted`, says which one tripped, and keeps the completed results, the trail of
versions and the lessons. Malformed plans count toward the breakers instead of crashing."""

from __future__ import annotations

from kernel.budgets import Budget
from kernel.llm import ScriptedLLM
from kernel.plan import BreakerConfig, ExecutorConfig, PlanAndExecuteAgent, PlanRunResult
from tests.kernel.plan.toolkit import World, plan_json, step
from tracer.conventions import ReplanVerdict, StopReason

FOUR_STEPS = plan_json(
    step("E1", "get_orders", {"customer": "ghost"}),
    step("E2", "sum_totals", {"rows": "#E1.rows"}),
    step("E3", "report", {"total": "#E2.total"}),
    step("E4", "quote", {"symbol": "X"}),
)


def _retry_ghost(n: int) -> str:
    """A replan that tries another (still failing) customer name: new action sequence each time."""
    return plan_json(step("a", "get_orders", {"customer": f"ghost{n}"}, replaces="E1"),
                     step("b", "sum_totals", {"rows": "#a.rows"}), step("c", "report", {"total": "#b.total"}),
                     cause=f"try ghost{n}")


def _assert_exhausted(result: PlanRunResult, verdict: ReplanVerdict) -> None:
    assert result.ok is False
    assert result.stop_reason == StopReason.REPLAN_EXHAUSTED
    assert result.answer is None
    assert result.trip is not None and result.trip.verdict == verdict
    assert verdict.value in (result.error or "")
    # what was achieved is kept: the independent quote, the versions, the lessons
    assert [c.step_id for c in result.completed] == ["E4"]
    assert result.plan_versions and result.plan_versions[0].version == 1
    assert result.lessons and all("get_orders" in x or "rejected" in x for x in result.lessons)
    assert len(result.lessons) <= 5


async def test_same_step_failing_more_than_n_times_trips_the_step_breaker() -> None:
    world = World()
    llm = ScriptedLLM([FOUR_STEPS, _retry_ghost(2), _retry_ghost(3), _retry_ghost(4)])
    agent = PlanAndExecuteAgent("pe", "1", llm, world.registry(), breakers=BreakerConfig(max_replans=10))
    result = await agent.run("spend")
    _assert_exhausted(result, ReplanVerdict.STEP_BREAKER)
    assert [r.verdict for r in result.replans] == [ReplanVerdict.ADMITTED] * 3 + [ReplanVerdict.STEP_BREAKER]
    assert [r.granularity for r in result.replans] == ["patch", "tail", "global", "global"]  # escalation
    assert len(result.plan_versions) == 4
    assert world.called("get_orders") == 4
    assert llm.remaining == 0  # the refused replan was never paid for


async def test_environmental_failure_repeating_trips_the_step_breaker_without_a_replan_call() -> None:
    world = World(quote_timeouts=10**6)
    llm = ScriptedLLM([plan_json(step("E1", "quote", {"symbol": "X"}), step("E2", "get_orders", {"customer": "a"}))])
    agent = PlanAndExecuteAgent(
        "pe", "1", llm, world.registry(),
        executor=ExecutorConfig(retries=0, backoff_initial_s=0, backoff_max_s=0),
        breakers=BreakerConfig(max_same_failure=1),
    )
    result = await agent.run("quote")
    # 1st timeout: route none (re-run); 2nd: escalates to patch, but the breaker (limit 1) refuses it
    assert result.stop_reason == StopReason.REPLAN_EXHAUSTED
    assert result.trip.verdict == ReplanVerdict.STEP_BREAKER
    assert world.called("quote") == 2 and len(llm.calls) == 1


async def test_total_replans_default_to_half_the_plan() -> None:
    world = World()
    llm = ScriptedLLM([FOUR_STEPS, _retry_ghost(2), _retry_ghost(3), _retry_ghost(4)])
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry()).run("spend")
    _assert_exhausted(result, ReplanVerdict.TOTAL_BREAKER)
    assert [r.verdict for r in result.replans] == [ReplanVerdict.ADMITTED] * 2 + [ReplanVerdict.TOTAL_BREAKER]
    assert llm.remaining == 1


async def test_token_gate_refuses_a_replan_estimated_too_big() -> None:
    world = World()
    llm = ScriptedLLM([FOUR_STEPS, _retry_ghost(2)])
    agent = PlanAndExecuteAgent("pe", "1", llm, world.registry(), breakers=BreakerConfig(max_replan_tokens=500))
    result = await agent.run("spend")
    _assert_exhausted(result, ReplanVerdict.TOKEN_GATE)
    [rep] = result.replans
    assert rep.estimated_tokens > 500 and rep.input_tokens == 0
    assert len(llm.calls) == 1


async def test_token_gate_uses_the_runs_remaining_input_budget() -> None:
    world = World()
    llm = ScriptedLLM([FOUR_STEPS, _retry_ghost(2)])
    budget = Budget(max_steps=None, max_input_tokens=1200)
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry(), budget=budget).run("spend")
    _assert_exhausted(result, ReplanVerdict.TOKEN_GATE)
    assert "allowed" in result.trip.detail


async def test_malformed_replans_count_toward_the_breakers() -> None:
    world = World()
    llm = ScriptedLLM([FOUR_STEPS, "I would rather not.", '{"steps": [{"id": "x"}]}', _retry_ghost(2)])
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry()).run("spend")
    _assert_exhausted(result, ReplanVerdict.TOTAL_BREAKER)
    assert [r.verdict for r in result.replans] == [None, None, ReplanVerdict.TOTAL_BREAKER]
    assert "expected a JSON object" in result.replans[0].format_error
    assert "steps.0.tool" in result.replans[1].format_error
    assert len(result.format_errors) == 2


async def test_malformed_first_plans_end_with_unparsable_exhausted() -> None:
    llm = ScriptedLLM(["plan? what plan", "[]", '{"steps": [{"id": "E1", "tool": "nope"}]}'])
    result = await PlanAndExecuteAgent("pe", "1", llm, World().registry()).run("x")
    assert (result.ok, result.stop_reason) == (False, StopReason.UNPARSABLE_EXHAUSTED)
    assert len(result.format_errors) == 3 and "unknown tool 'nope'" in result.format_errors[2]


async def test_one_malformed_first_plan_is_retried() -> None:
    llm = ScriptedLLM(["```json\n{\"steps\": [}\n```", plan_json(step("E1", "quote", {"symbol": "X"}), answer="#E1.price")])
    result = await PlanAndExecuteAgent("pe", "1", llm, World().registry()).run("x")
    assert result.ok, result.error
    assert result.answer == "10" and len(result.format_errors) == 1
