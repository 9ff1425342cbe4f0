"""A model flailing with one tool (each call with different arguments) is caught when the streak
rule is on: past `max_same_tool_in_a_row` executed calls in a row, the next call of that tool is
refused (a warning first, then a hard flag that counts as an error), another tool ends the streak,
and the refusals are guard events, never tool observations. The kernel's pager and memory writer
are exempt: paging a saved-aside result or writing several facts is not flailing."""

from __future__ import annotations

from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.llm import ScriptedLLM
from kernel.loop_guard import LoopGuard
from kernel.memory import LongTermMemory, SQLiteMemoryStore
from kernel.observations import BigObservations
from kernel.tools import tool
from kernel.types import ToolCall
from tests.support.scripted_runs import act, final
from tracer.conventions import GuardRule, StepKind, StopReason


def call(name: str, **args: object) -> ToolCall:
    return ToolCall(id=f"{name}-{args}", name=name, arguments=args)


def test_third_call_in_a_row_with_new_arguments_is_refused_then_hard() -> None:
    guard = LoopGuard(max_same_tool_in_a_row=2).session()
    guard.record_execution(1, call("search", q="a"), "A", is_error=False)
    assert guard.check_call(2, call("search", q="b")) is None
    guard.record_execution(2, call("search", q="b"), "B", is_error=False)
    soft = guard.check_call(3, call("search", q="c"))
    assert soft is not None and soft.rule == GuardRule.SAME_TOOL_STREAK
    assert soft.severity == "soft" and not soft.counts_as_error and soft.previous_step == 2
    assert "2 times in a row" in soft.message and "NOT executed" in soft.message
    hard = guard.check_call(4, call("search", q="d"))
    assert hard.severity == "hard" and hard.counts_as_error and "LOOP DETECTED" in hard.message


def test_another_tool_ends_the_streak_and_the_rule_can_be_off() -> None:
    guard = LoopGuard(max_same_tool_in_a_row=2).session()
    for step, q in enumerate("ab", start=1):
        guard.record_execution(step, call("search", q=q), q, is_error=False)
    guard.record_execution(3, call("open", id=1), "page", is_error=False)
    assert guard.check_call(4, call("search", q="c")) is None
    off = LoopGuard(max_same_tool_in_a_row=None).session()
    for step, q in enumerate("abcde", start=1):
        assert off.check_call(step, call("search", q=q)) is None
        off.record_execution(step, call("search", q=q), q, is_error=False)


def test_identical_repeat_is_reported_as_a_repeat_not_a_streak() -> None:
    guard = LoopGuard(window=3, max_same_tool_in_a_row=2).session()
    guard.record_execution(1, call("search", q="a"), "A", is_error=False)
    guard.record_execution(2, call("search", q="b"), "B", is_error=False)
    assert guard.check_call(3, call("search", q="a")).rule == GuardRule.REPEATED_CALL


async def test_a_flailing_model_is_stopped_and_its_refusals_are_guard_events() -> None:
    executed: list[str] = []

    @tool
    async def search(q: str) -> str:
        """Search."""
        executed.append(q)
        return f"nothing about {q}"

    n = iter(range(1000))
    llm = ScriptedLLM(policy=lambda m, t: act("search", q=f"try {next(n)}"))
    agent = Agent("a", "1", llm, [search], loop_guard=LoopGuard(max_same_tool_in_a_row=2),
                  budget=Budget(max_steps=20, max_consecutive_errors=2))
    result = await agent.run("t")
    assert result.stop_reason == StopReason.TOOL_ERROR_EXHAUSTED and len(result.steps) < 20
    assert executed == ["try 0", "try 1"]
    assert [s.kind for s in result.steps[:3]] == [StepKind.TOOL, StepKind.TOOL, StepKind.LOOP_GUARD]
    refused = result.steps[2]
    assert refused.observations == [] and [e.rule for e in refused.guard_events] == [GuardRule.SAME_TOOL_STREAK]
    assert refused.guard_events[0].tool_call_id == refused.calls[0].id
    assert all(not s.observations for s in result.steps[2:])


async def test_a_model_that_changes_tool_after_the_warning_goes_on() -> None:
    @tool
    async def search(q: str) -> str:
        """Search."""
        return f"nothing about {q}"

    @tool
    async def ask(question: str) -> str:
        """Ask a person."""
        return "it is 42"

    llm = ScriptedLLM([act("search", q="a"), act("search", q="b"), act("search", q="c"),
                       act("ask", question="what is it?"), act("search", q="c"), final("42")])
    result = await Agent("a", "1", llm, [search, ask], loop_guard=LoopGuard(max_same_tool_in_a_row=2)).run("t")
    assert result.ok and result.answer == "42"
    assert [s.kind for s in result.steps] == [StepKind.TOOL, StepKind.TOOL, StepKind.LOOP_GUARD, StepKind.TOOL,
                                              StepKind.TOOL, StepKind.FINISH]


async def test_paging_a_saved_aside_result_and_writing_several_memories_are_not_a_streak(tmp_path) -> None:
    """The kernel's own pager and memory writer are meant to be called again and again with new
    arguments: with the streak rule on, a model reads a big result page after page and writes
    several facts in a row, none refused; an identical page read is still a repeat, and the
    exemption is the guard's setting (emptied, the third page read is refused)."""
    @tool
    async def export_orders() -> str:
        """Every order, one per line."""
        return "\n".join(f"order {i:04d}: shipped" for i in range(2000))

    pages = [act("read_observation", ref="obs-1", offset=offset) for offset in (2000, 6000, 10000, 14000)]
    facts = [act("remember", key=f"fact-{i}", value=f"value {i}") for i in range(4)]
    script = [act("export_orders"), *pages, act("read_observation", ref="obs-1", offset=14000), *facts,
              final("2000 orders")]
    memory = LongTermMemory(SQLiteMemoryStore(tmp_path / "memories.sqlite"))
    llm = ScriptedLLM(script)
    agent = Agent("shop", "1", llm, [export_orders], memory=memory, big_observations=BigObservations(),
                  loop_guard=LoopGuard(max_same_tool_in_a_row=2))
    result = await agent.run("Read every order and keep what matters", user_id="alice")
    assert result.ok and result.answer == "2000 orders"
    assert [s.kind for s in result.steps] == [StepKind.TOOL] * 5 + [StepKind.LOOP_GUARD] + [StepKind.TOOL] * 4 + [
        StepKind.FINISH]
    assert [e.rule for s in result.steps for e in s.guard_events] == [GuardRule.REPEATED_CALL]  # the same page again
    assert result.steps[4].observations[0].content.startswith("[obs-1: characters 14000-18000 of")  # fourth page
    assert sorted(r.key for r in memory.store.since("shop@1/alice", 0)) == [f"fact-{i}" for i in range(4)]

    strict = Agent("shop", "1", ScriptedLLM([act("export_orders"), *pages[:3], final("stuck")]), [export_orders],
                   big_observations=BigObservations(), loop_guard=LoopGuard(max_same_tool_in_a_row=2,
                                                                             streak_exempt=frozenset()))
    refused = await strict.run("Read every order")
    assert [e.rule for e in refused.steps[3].guard_events] == [GuardRule.SAME_TOOL_STREAK]
