"""After a global replan: results the failed premise consumed are void, the others stale; a new
plan that reads a void variable is rejected; the thrown-away work is priced as re-execution cost."""

from __future__ import annotations

import pytest

from kernel.llm import ScriptedLLM
from kernel.plan import PlanAndExecuteAgent, VariableHealth
from kernel.plan.variables import ResolveError, Variable, VariableTable
from tests.kernel.plan.toolkit import World, plan_json, step


def _v1() -> str:
    return plan_json(
        step("E1", "load_dataset", {"name": "sales"}),  # $0.50, consumed by the premise check
        step("E2", "verify_year", {"year": "#E1.year"}, premise=True),
        step("E3", "quote", {"symbol": "X"}),  # $0.01, independent
        step("E4", "report", {"total": "#E3.price"}),
    )


async def test_void_and_stale_results_and_reexecution_cost() -> None:
    world = World()
    llm = ScriptedLLM([
        _v1(),
        # reads the void E1: rejected by the checker, counted as a format error
        plan_json(step("n1", "sum_totals", {"rows": "#E1.rows"}), cause="reuse rows"),
        # reads the stale E3: allowed
        plan_json(step("n1", "load_dataset", {"name": "sales-2024"}), step("n2", "report", {"total": "#E3.price"}),
                  answer="#n2", cause="load 2024"),
    ])
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry()).run("sales 2024")
    assert result.ok, result.error
    health = {c.step_id: c.health for c in result.completed}
    # E4 ran beside E2 (it only needed E3); the rejected draft burned id E5
    assert health == {"E1": VariableHealth.VOID, "E3": VariableHealth.STALE, "E4": VariableHealth.STALE,
                      "E6": VariableHealth.CLEAN, "E7": VariableHealth.CLEAN}
    e1 = result.result_of("E1")
    assert "premise of E2 fell" in e1.health_reason
    assert [r.verdict for r in result.replans][0] is None
    assert "E5 reads E1, whose output is void" in result.replans[0].format_error
    assert result.replans[1].granularity == "global"
    assert result.reexecution_cost_usd == pytest.approx(0.51)
    assert result.replans[1].reexecution_cost_usd == pytest.approx(0.51)
    assert result.answer == " spent 10"
    # the prompt showed the health of what was computed
    user = llm.calls[1].messages[1].content
    assert "E1 load_dataset: run load_dataset [void] ->" in user
    assert "E3 quote: run quote [stale] ->" in user


def test_a_void_variable_cannot_be_read_and_health_never_improves() -> None:
    table = VariableTable()
    table.put(Variable(step_id="E1", tool="t", action="a", text='{"x": 1}', value={"x": 1}, version=1))
    assert table.resolve("#E1.x", {"E1"}) == 1
    table.mark("E1", VariableHealth.STALE, "old")
    assert table.resolve("#E1.x", {"E1"}) == 1  # stale is readable
    table.mark("E1", VariableHealth.VOID, "premise fell")
    table.mark("E1", VariableHealth.STALE, "later")
    assert table.get("E1").health == VariableHealth.VOID
    with pytest.raises(ResolveError) as err:
        table.resolve({"a": ["#E1.x"]}, {"E1"})
    assert err.value.kind == "missing_variable"
