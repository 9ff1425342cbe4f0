"""The checker refuses, before anything runs, plans that cannot run as written; the parser turns
any reply into a plan or a PlanFormatError, never a crash."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.plan import IdAllocator, PlanFormatError, check_plan, find_refs, first_plan, parse_plan_draft
from kernel.plan.variables import Variable, VariableHealth, VariableTable
from tests.kernel.plan.toolkit import World, plan_json, step

TOOLS = World().registry()


def _problems(text: str, table: VariableTable | None = None) -> list[str]:
    return check_plan(first_plan(parse_plan_draft(text), IdAllocator()), table or VariableTable(), TOOLS)


def test_a_sound_plan_passes() -> None:
    assert _problems(plan_json(step("E1", "get_orders", {"customer": "a"}),
                               step("E2", "sum_totals", {"rows": "#E1.rows"}), answer="#E2.total")) == []


def test_cycles_are_rejected() -> None:
    text = plan_json(step("E1", "sum_totals", {"rows": "#E3.rows"}), step("E2", "sum_totals", {"rows": "#E1.rows"}),
                     step("E3", "sum_totals", {"rows": "#E2.rows"}))
    [problem] = _problems(text)
    assert problem.startswith("dependency cycle: ")
    assert set(problem.removeprefix("dependency cycle: ").split(" -> ")) == {"E1", "E2", "E3"}


def test_self_dependency_and_dangling_references_are_rejected() -> None:
    text = plan_json(step("E1", "get_orders", {"customer": "#E1"}),
                     step("E2", "sum_totals", {"rows": "#E9.rows"}, depends_on=["E7"]), answer="#E8")
    assert _problems(text) == [
        "E1 depends on itself",
        "E2 refers to E7, which is neither a step of the plan nor a result",
        "E2 refers to E9, which is neither a step of the plan nor a result",
        "the answer refers to E8, which no step produces",
    ]


def test_void_reads_unknown_tools_duplicates_and_bad_expectations_are_rejected() -> None:
    table = VariableTable()
    table.put(Variable(step_id="E7", tool="t", action="a", text="x", value="x", version=1,
                       health=VariableHealth.VOID))
    text = plan_json(step("E1", "fly", {}), step("E2", "report", {"total": "#E7"}),
                     step("E3", "quote", {"symbol": "X"}, expect={"type": 12},
                          fallback={"tool": "nope", "args": {}}))
    assert _problems(text, table) == [
        "E1: unknown tool 'fly'",
        "E2 reads E7, whose output is void",
        "E3: unknown fallback tool 'nope'",
        "E3: `expect` is not a valid JSON Schema: 12 is not valid under any of the given schemas",
    ]
    with pytest.raises(PlanFormatError, match="used twice"):
        first_plan(parse_plan_draft(plan_json(step("A", "quote"), step("A", "quote"))), IdAllocator())


def test_hash_words_that_name_no_step_are_plain_text() -> None:
    assert find_refs({"q": "#1 priority, see #general"}, {"E1"}) == []
    [ref] = find_refs({"q": ["total: #E1.rows[0].total!"]})
    assert (ref.step_id, ref.path) == ("E1", ".rows[0].total")


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (None, "empty"),
        ("", "empty"),
        ("Sure! First I will look things up.", "expected a JSON object"),
        ("42", "got int"),
        ('{"plan": []}', "steps: Field required"),
        ('{"steps": []}', "at least 1 item"),
        ('{"steps": [{"id": "E1", "tool": "quote", "args": "X"}]}', "steps.0.args"),
        ('{"steps": [{"id": "E1", "tool": "quote", "on_failure": "pray"}]}', "steps.0.on_failure"),
    ],
)
def test_malformed_replies_are_format_errors(reply: str | None, why: str) -> None:
    with pytest.raises(PlanFormatError, match=why):
        parse_plan_draft(reply)


def test_fenced_bare_list_and_repairable_json_are_accepted() -> None:
    fenced = "Here you go:\n```json\n" + plan_json(step("E1", "quote", {"symbol": "X"})) + "\n```"
    assert parse_plan_draft(fenced).steps[0].tool == "quote"
    assert parse_plan_draft('[{"id": "#E1", "tool": "quote", "arguments": {"symbol": "X"},}]').steps[0].args == {
        "symbol": "X"}


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=200), st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=15,
).map(lambda v: __import__("json").dumps(v))))
def test_any_reply_is_a_plan_or_a_format_error(reply: str) -> None:
    try:
        draft = parse_plan_draft(reply)
    except PlanFormatError:
        return
    try:
        plan = first_plan(draft, IdAllocator())
    except PlanFormatError:
        return
    assert isinstance(check_plan(plan, VariableTable(), TOOLS), list)
