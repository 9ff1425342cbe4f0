"""The cumulative replanning budget (absolute, or a share of the run's input-token budget) and the
tool-call gate refuse a replan before it is paid for; the run ends `replan_exhausted` naming the
gate, and the refused replan span carries the reason (`steplens.replan.refusal` and one
`steplens.replan_guard` event). A plan-and-execute run on the scripted LLM, real tools, real tracer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import tracer
from kernel.budgets import Budget
from kernel.llm import ScriptedLLM
from kernel.plan import BreakerConfig, PlanAndExecuteAgent, PlanRunResult
from tests.kernel.plan.toolkit import World, plan_json, step
from tracer import conventions as c
from tracer.conventions import ReplanVerdict, StopReason
from tracer.provider import TracingHandle

FOUR_STEPS = plan_json(
    step("E1", "get_orders", {"customer": "ghost"}),
    step("E2", "sum_totals", {"rows": "#E1.rows"}),
    step("E3", "report", {"total": "#E2.total"}),
    step("E4", "quote", {"symbol": "X"}),
)


WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]


def _retry(n: int) -> str:
    """A genuinely different repair each time (another multi-word name: not a literal variant),
    still failing: only the gate under test stops it before the step breaker does."""
    return plan_json(step(f"a{n}", "get_orders", {"customer": f"ghost {WORDS[n]} shop"}, replaces="E1"),
                     step(f"b{n}", "sum_totals", {"rows": f"#a{n}.rows"}, replaces="E2"),
                     step(f"c{n}", "report", {"total": f"#b{n}.total"}), cause=f"try {WORDS[n]}")


def _script() -> list[str]:
    return [FOUR_STEPS, *(_retry(n) for n in range(1, 8))]


async def _run(config: BreakerConfig, budget: Budget | None = None) -> tuple[PlanRunResult, ScriptedLLM]:
    llm = ScriptedLLM(_script())
    agent = PlanAndExecuteAgent("pe", "1", llm, World().registry(), breakers=config, budget=budget)
    return await agent.run("spend"), llm


@pytest.fixture
def memory() -> Iterator[TracingHandle]:
    handle = tracer.setup(service_name="gate-tests", endpoint="memory")
    try:
        yield handle
    finally:
        handle.shutdown(timeout_s=2.0)


def _refused_span(handle: TracingHandle, verdict: ReplanVerdict):
    spans = [s for s in handle.memory_exporter.get_finished_spans() if s.name == "replan pe"]
    [span] = [s for s in spans if s.attributes.get(c.REPLAN_VERDICT) == verdict.value]
    [event] = [e for e in span.events if e.name == c.EVENT_REPLAN_GUARD]
    assert event.attributes[c.REPLAN_GUARD_RULE] == verdict.value
    assert event.attributes[c.REPLAN_GUARD_REASON] == span.attributes[c.REPLAN_REFUSAL]
    assert not [s for s in handle.memory_exporter.get_finished_spans()
                if s.parent is not None and s.parent.span_id == span.context.span_id]  # never paid for
    return span, event


async def test_cumulative_replan_budget_refuses_once_spent(memory: TracingHandle) -> None:
    # What the first replan costs, from a run without the budget: the budget admits exactly it.
    free, _ = await _run(BreakerConfig(max_replans=10, replan_budget_share=None))
    first = free.replans[0]
    assert first.verdict == ReplanVerdict.ADMITTED
    memory.memory_exporter.clear()

    budget = first.estimated_tokens
    result, llm = await _run(BreakerConfig(max_replans=10, replan_budget_tokens=budget, replan_budget_share=None))
    assert (result.ok, result.stop_reason) == (False, StopReason.REPLAN_EXHAUSTED)
    assert [r.verdict for r in result.replans] == [ReplanVerdict.ADMITTED, ReplanVerdict.REPLAN_BUDGET]
    assert result.trip.verdict == ReplanVerdict.REPLAN_BUDGET
    spent = result.replans[0].input_tokens + result.replans[0].output_tokens
    assert f"replanning used {spent} tokens" in result.trip.detail and f"budget of {budget}" in result.trip.detail
    assert len(llm.calls) == 2  # the first plan and the one admitted replan

    span, event = _refused_span(memory, ReplanVerdict.REPLAN_BUDGET)
    assert span.attributes[c.REPLAN_BUDGET_USED_TOKENS] == spent
    assert event.attributes[c.REPLAN_GUARD_REASON] == result.trip.detail


async def test_replan_budget_defaults_to_half_the_runs_input_tokens() -> None:
    free, _ = await _run(BreakerConfig(max_replans=10, replan_budget_share=None))
    first = free.replans[0]
    limit = 2 * first.estimated_tokens  # half of it admits the first replan, never a second
    result, _ = await _run(BreakerConfig(max_replans=10), Budget(max_steps=None, max_input_tokens=limit))
    assert result.trip is not None and result.trip.verdict == ReplanVerdict.REPLAN_BUDGET, result.trip
    assert f"budget of {limit // 2}" in result.trip.detail
    # the same run without a share gate goes on replanning
    more, _ = await _run(BreakerConfig(max_replans=10, replan_budget_share=None),
                         Budget(max_steps=None, max_input_tokens=limit))
    assert len([r for r in more.replans if r.verdict == ReplanVerdict.ADMITTED]) > 1


async def test_tool_call_gate_wants_enough_new_evidence(memory: TracingHandle) -> None:
    result, llm = await _run(BreakerConfig(max_replans=10, min_tool_calls=3))
    # E1 failed after two tool calls (get_orders, and the independent quote): not enough evidence
    assert (result.ok, result.stop_reason) == (False, StopReason.REPLAN_EXHAUSTED)
    [rep] = result.replans
    assert (rep.verdict, rep.tool_calls) == (ReplanVerdict.TOOL_CALL_GATE, 2)
    assert result.trip.detail == "2 tool call(s) since the last plan; a replan needs 3"
    assert len(llm.calls) == 1
    span, _ = _refused_span(memory, ReplanVerdict.TOOL_CALL_GATE)
    assert span.attributes[c.REPLAN_TOOL_CALLS] == 2


def _reads_a_missing_field() -> ScriptedLLM:
    """v2's only new step reads a field E2's quote does not have: it fails before any tool call of v2."""
    return ScriptedLLM([
        plan_json(step("E1", "get_orders", {"customer": "ghost"}), step("E2", "quote", {"symbol": "X"})),
        plan_json(step("a", "sum_totals", {"rows": "#E2.rows"}, replaces="E1"), cause="use the quote"),
        plan_json(step("b", "search_orders", {"name": "acme"}), answer="#b.rows", cause="search instead"),
    ])


async def test_tool_call_gate_counts_from_the_last_adopted_plan() -> None:
    result = await PlanAndExecuteAgent("pe", "1", _reads_a_missing_field(), World().registry(),
                                       breakers=BreakerConfig(max_replans=10)).run("spend")
    assert [(r.verdict, r.tool_calls) for r in result.replans] == [
        (ReplanVerdict.ADMITTED, 2), (ReplanVerdict.TOOL_CALL_GATE, 0)]
    # off (0), the same failure is replanned and the run answers
    ok = await PlanAndExecuteAgent("pe", "1", _reads_a_missing_field(), World().registry(),
                                   breakers=BreakerConfig(max_replans=10, min_tool_calls=0)).run("spend")
    assert [r.verdict for r in ok.replans] == [ReplanVerdict.ADMITTED, ReplanVerdict.ADMITTED]
    assert ok.ok, ok.error


def test_gate_settings_are_checked() -> None:
    for bad in ({"min_tool_calls": -1}, {"max_literal_variants": -1}, {"replan_budget_share": 0},
                {"replan_budget_share": 1.5}, {"replan_budget_tokens": 0}):
        with pytest.raises(ValueError):
            BreakerConfig(**bad)
