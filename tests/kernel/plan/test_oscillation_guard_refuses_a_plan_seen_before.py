"""A→B→A: a replan that brings back an action sequence an earlier version already had is refused
(verdict `oscillation`) instead of paying to run it again, and the run ends replan_exhausted."""

from __future__ import annotations

from kernel.llm import ScriptedLLM
from kernel.plan import PlanAndExecuteAgent
from tests.kernel.plan.toolkit import World, plan_json, step
from tracer.conventions import ReplanVerdict, StopReason

PLAN_A = [
    step("E1", "get_orders", {"customer": "ghost"}),
    step("E2", "sum_totals", {"rows": "#E1.rows"}),
    step("E3", "report", {"total": "#E2.total"}),
]


async def test_a_b_a_is_refused() -> None:
    world = World()
    llm = ScriptedLLM([
        plan_json(*PLAN_A, step("E4", "quote", {"symbol": "X"})),
        # B: another spelling, which fails the same way
        plan_json(step("b1", "get_orders", {"customer": "ghost-b"}), step("b2", "sum_totals", {"rows": "#b1.rows"}),
                  cause="try the other spelling"),
        # back to A (new labels, same actions): ids differ, the action sequence does not
        plan_json(step("z1", "get_orders", {"customer": "ghost"}), step("z2", "sum_totals", {"rows": "#z1.rows"}),
                  step("z3", "report", {"total": "#z2.total"}), cause="try the first spelling again"),
    ])
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry()).run("spend")
    assert (result.ok, result.stop_reason) == (False, StopReason.REPLAN_EXHAUSTED)
    assert [r.verdict for r in result.replans] == [ReplanVerdict.ADMITTED, ReplanVerdict.OSCILLATION]
    assert result.trip.verdict == ReplanVerdict.OSCILLATION
    assert "version 1" in result.trip.detail
    assert len(result.plan_versions) == 2  # A was never adopted again
    assert world.called("get_orders") == 2  # and never run again
    assert any("proposed again" in lesson for lesson in result.lessons)
    fingerprints = [v.fingerprint() for v in result.plan_versions]
    assert fingerprints[0] != fingerprints[1]


async def test_a_plan_differing_only_in_ids_has_the_same_fingerprint() -> None:
    from kernel.plan import IdAllocator, first_plan, parse_plan_draft

    a = first_plan(parse_plan_draft(plan_json(*PLAN_A)), IdAllocator())
    relabelled = plan_json(step("x", "get_orders", {"customer": "ghost"}), step("y", "sum_totals", {"rows": "#x.rows"}),
                           step("z", "report", {"total": "#y.total"}))
    ids = IdAllocator()
    ids.take(), ids.take(), ids.take()
    b = first_plan(parse_plan_draft(relabelled), ids)
    assert b.ids() == ["E4", "E5", "E6"]
    assert a.fingerprint() == b.fingerprint()
    other = first_plan(parse_plan_draft(plan_json(step("E1", "get_orders", {"customer": "acme"}))), IdAllocator())
    assert other.fingerprint() != a.fingerprint()
