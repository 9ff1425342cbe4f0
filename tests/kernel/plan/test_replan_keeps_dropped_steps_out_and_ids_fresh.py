"""Patch, tail and global each keep and drop exactly the right steps, give every new step a
fresh id (never one any earlier version used, whatever the replanner called it), keep the
failed step's lineage, and point untouched steps at their replacements."""

from __future__ import annotations

from kernel.llm import ScriptedLLM
from kernel.plan import Granularity, PlanAndExecuteAgent, PlanRunResult, RouterRules
from tests.kernel.plan.toolkit import World, plan_json, step

FOUR_STEPS = plan_json(
    step("E1", "get_orders", {"customer": "ghost"}),
    step("E2", "sum_totals", {"rows": "#E1.rows"}),
    step("E3", "report", {"total": "#E2.total", "customer": "ghost"}),
    step("E4", "quote", {"symbol": "X"}),
    answer="#E3",
)


def _ids_fresh(result: PlanRunResult) -> None:
    introduced: list[str] = []
    for version in result.plan_versions:
        for s in version.steps:
            if s.version == version.version:
                introduced.append(s.id)
    assert len(introduced) == len(set(introduced)), introduced


async def test_patch_replaces_the_failed_step_and_its_direct_successors_only() -> None:
    world = World()
    llm = ScriptedLLM([
        FOUR_STEPS,
        # the replanner reuses the label "E1": it must still get a fresh id
        plan_json(step("E1", "search_orders", {"name": "ghost"}, replaces="E1"),
                  step("E2", "sum_totals", {"rows": "#E1.rows"}, replaces="E2"), cause="typo"),
    ])
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry()).run("ghost's spend")
    assert result.ok, result.error
    [rep] = result.replans
    assert (rep.granularity, rep.dropped, rep.kept, rep.added) == ("patch", ["E1", "E2"], ["E3", "E4"], ["E5", "E6"])
    v2 = result.plan_versions[1]
    assert [s.id for s in v2.steps] == ["E5", "E6", "E3", "E4"]
    e5, e6, e3 = v2.get("E5"), v2.get("E6"), v2.get("E3")
    assert e6.args == {"rows": "#E5.rows"}
    assert e3.args == {"total": "#E6.total", "customer": "ghost"}  # the kept step now reads the replacement
    assert (e5.origin, e6.origin, e3.version) == ("E1", "E2", 1)
    assert result.answer == "ghost spent 5"
    assert world.called("quote") == 1  # the completed independent step is not re-run
    _ids_fresh(result)


async def test_tail_replaces_everything_not_yet_done() -> None:
    world = World()
    llm = ScriptedLLM([
        FOUR_STEPS,
        plan_json(step("s1", "search_orders", {"name": "ghost"}), step("s2", "sum_totals", {"rows": "#s1.rows"}),
                  step("s3", "report", {"total": "#s2.total"}), answer="#s3", cause="typo"),
    ])
    agent = PlanAndExecuteAgent("pe", "1", llm, world.registry(),
                                router_rules=RouterRules(override=lambda s, g: Granularity.TAIL))
    result = await agent.run("ghost's spend")
    assert result.ok, result.error
    [rep] = result.replans
    assert (rep.granularity, rep.dropped, rep.kept, rep.added) == ("tail", ["E1", "E2", "E3"], ["E4"], ["E5", "E6", "E7"])
    assert [s.id for s in result.plan_versions[1].steps] == ["E5", "E6", "E7", "E4"]
    # lineage: the first new step using the failed step's tool would inherit; search_orders does not
    assert result.plan_versions[1].get("E5").origin == "E5"
    assert result.answer == " spent 5"
    _ids_fresh(result)


async def test_global_drops_the_whole_plan_and_keeps_results_as_variables() -> None:
    world = World()
    llm = ScriptedLLM([
        plan_json(step("E1", "load_dataset", {"name": "sales"}),
                  step("E2", "verify_year", {"year": "#E1.year"}, premise=True),
                  step("E3", "quote", {"symbol": "X"}), step("E4", "report", {"total": "#E3.price"})),
        plan_json(step("E1", "load_dataset", {"name": "sales-2024"}), step("E2", "report", {"total": "#E3.price"}),
                  answer="#E2", cause="old data"),
    ])
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry()).run("sales")
    assert result.ok, result.error
    [rep] = result.replans
    assert (rep.granularity, rep.dropped, rep.kept, rep.added) == ("global", ["E1", "E2", "E3", "E4"], [], ["E5", "E6"])
    v2 = result.plan_versions[1]
    assert [s.id for s in v2.steps] == ["E5", "E6"]
    assert v2.get("E6").args == {"total": "#E3.price"}  # a stale result from v1 may still be read
    assert result.answer == " spent 10"
    _ids_fresh(result)
