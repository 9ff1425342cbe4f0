"""The oscillation guard compares plans with their literals normalised: a replanner that proposes the
failed plan again with another number, quoted name or id is refused (verdict `oscillation`), after
`max_literal_variants` such variants (default 1: the first argument fix is what a patch is for); a
genuinely different plan is not. Scripted LLM, real tools and dispatch."""

from __future__ import annotations

from kernel.llm import ScriptedLLM
from kernel.plan import BreakerConfig, IdAllocator, PlanAndExecuteAgent, first_plan, parse_plan_draft
from tests.kernel.plan.toolkit import World, plan_json, step
from tracer.conventions import ReplanVerdict, StopReason

FIRST = plan_json(step("E1", "get_orders", {"customer": "ghost"}), step("E2", "sum_totals", {"rows": "#E1.rows"}),
                  answer="#E2.total")


def _same_with(customer: str) -> str:
    return plan_json(step("a", "get_orders", {"customer": customer}, replaces="E1"),
                     step("b", "sum_totals", {"rows": "#a.rows"}, replaces="E2"), answer="#b.total", cause="retry")


def _shape(*steps: dict) -> str:
    return first_plan(parse_plan_draft(plan_json(*steps)), IdAllocator()).shape_fingerprint()


async def test_a_plan_repeated_with_a_changed_literal_is_caught_at_once_when_no_variant_is_allowed() -> None:
    world = World()
    llm = ScriptedLLM([FIRST, _same_with("ghost-2")])
    agent = PlanAndExecuteAgent("pe", "1", llm, world.registry(), breakers=BreakerConfig(max_literal_variants=0))
    result = await agent.run("spend")
    assert (result.ok, result.stop_reason) == (False, StopReason.REPLAN_EXHAUSTED)
    [rep] = result.replans
    assert rep.verdict == ReplanVerdict.OSCILLATION
    assert "version 1 with only literal arguments changed" in rep.detail
    assert world.called("get_orders") == 1  # the variant was never run
    assert len(result.plan_versions) == 1


async def test_by_default_one_literal_fix_is_admitted_and_a_second_variant_is_caught() -> None:
    world = World()
    llm = ScriptedLLM([FIRST, _same_with("ghost-2"), _same_with("ghost-3")])
    agent = PlanAndExecuteAgent("pe", "1", llm, world.registry(), breakers=BreakerConfig(max_replans=10))
    result = await agent.run("spend")
    assert [r.verdict for r in result.replans] == [ReplanVerdict.ADMITTED, ReplanVerdict.OSCILLATION]
    assert "versions 1, 2 already have that shape" in result.trip.detail
    assert world.called("get_orders") == 2
    assert any("proposed again" in lesson for lesson in result.lessons)


async def test_a_genuinely_different_plan_is_not_caught() -> None:
    world = World()
    search = plan_json(step("a", "search_orders", {"name": "ghost"}, replaces="E1"),
                       step("b", "sum_totals", {"rows": "#a.rows"}, replaces="E2"), answer="#b.total", cause="search")
    llm = ScriptedLLM([FIRST, _same_with("ghost-2"), search])
    agent = PlanAndExecuteAgent("pe", "1", llm, world.registry(), breakers=BreakerConfig(max_replans=10))
    result = await agent.run("spend")
    assert result.ok, result.error
    assert [r.verdict for r in result.replans] == [ReplanVerdict.ADMITTED, ReplanVerdict.ADMITTED]
    assert result.answer == "5"


async def test_with_normalisation_off_only_exact_repeats_are_caught() -> None:
    world = World()
    llm = ScriptedLLM([FIRST, _same_with("ghost-2"), _same_with("ghost-3"), _same_with("ghost-2")])
    config = BreakerConfig(max_replans=10, normalise_literals=False)
    result = await PlanAndExecuteAgent("pe", "1", llm, world.registry(), breakers=config).run("spend")
    assert [r.verdict for r in result.replans] == [ReplanVerdict.ADMITTED, ReplanVerdict.ADMITTED,
                                                   ReplanVerdict.OSCILLATION]
    assert result.trip.detail == "the new plan repeats the action sequence of version 2"


def test_numbers_quoted_strings_and_ids_are_literals_but_words_are_not() -> None:
    base = _shape(step("E1", "sql", {"q": "select total from orders where id = 42 and name = 'acme'", "limit": 10}))
    assert base == _shape(step("E1", "sql", {"q": "select total from orders where id = 7 and name = 'ghost'",
                                              "limit": 3}))
    assert _shape(step("E1", "refund", {"order": "ORD-1234"})) == _shape(step("E1", "refund", {"order": "ORD-99"}))
    assert _shape(step("E1", "fetch", {"id": "550e8400-e29b-41d4-a716-446655440000"})) == \
        _shape(step("E1", "fetch", {"id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8"}))
    # different words, a different tool or a different argument set are different plans
    assert base != _shape(step("E1", "sql", {"q": "select count from refunds where id = 42", "limit": 10}))
    assert _shape(step("E1", "get_orders", {"customer": "x"})) != _shape(step("E1", "search_orders", {"name": "x"}))
    assert _shape(step("E1", "get_orders", {"customer": "x"})) != _shape(step("E1", "get_orders", {"id": "x"}))
    # references keep their path: reading another field is another plan
    two = (step("E1", "get_orders", {"customer": "x"}),)
    assert _shape(*two, step("E2", "sum_totals", {"rows": "#E1.rows"})) != \
        _shape(*two, step("E2", "sum_totals", {"rows": "#E1.items"}))
