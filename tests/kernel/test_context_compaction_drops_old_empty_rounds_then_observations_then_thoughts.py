"""Compaction order and what it may touch: old empty rounds (no executed tool call, no new
information) go first and whole, then old long observations, then old thoughts (their action
lines stay); the system prompt, the task and the latest round are never touched, and in
function-calling mode every remaining tool call is still answered."""

from __future__ import annotations

from kernel.context import THOUGHT_MARKER, Context, ContextPolicy
from kernel.types import Message, ToolCall
from tracer.conventions import CompactedKind


def chars_estimator(messages: list[Message]) -> int:
    """Deterministic estimate (1 token per 4 chars) so thresholds are exact in tests."""
    return sum(len(m.content or "") for m in messages) // 4


def make(mode: str = "text", **policy) -> Context:
    return Context(
        system_prompt="SYSTEM " * 20,
        task="TASK: find it",
        mode=mode,
        policy=ContextPolicy(**{"context_limit_tokens": 100_000, "watermark": 1.0, "min_elide_tokens": 50,
                                "min_thought_tokens": 10, **policy}),
        estimate=chars_estimator,
    )


THOUGHT = "I should look the order up in the database before answering " * 3


def tool_round(ctx: Context, step: int, size: int = 800) -> None:
    call = ToolCall(id=f"c{step}", name="search", arguments={"q": step})
    ctx.add_assistant(f"Thought: {THOUGHT}\nAction: search\nAction Input: {{\"q\": {step}}}", [call],
                      step=step, thought=THOUGHT)
    ctx.add_observations(step, [(call, f"obs{step} " + "x" * size)])


def format_error_round(ctx: Context, step: int) -> None:
    ctx.add_assistant(f"garbage reply {step} " + "g" * 200, [], step=step)
    ctx.add_feedback(f"Your last reply could not be used (round {step}) " + "f" * 200)
    ctx.mark_empty_round(step)


def texts(ctx: Context) -> str:
    return "\n".join(m.content or "" for m in ctx.messages)


async def test_empty_rounds_go_first_and_alone_when_that_is_enough() -> None:
    ctx = make()
    format_error_round(ctx, 1)
    tool_round(ctx, 2)
    format_error_round(ctx, 3)
    tool_round(ctx, 4)
    total = ctx.prompt_tokens()
    empty = chars_estimator(ctx.messages[2:4]) + chars_estimator(ctx.messages[6:8])
    ctx = make(budget_tokens=total - empty + 1)  # dropping both empty rounds is just enough
    format_error_round(ctx, 1)
    tool_round(ctx, 2)
    format_error_round(ctx, 3)
    tool_round(ctx, 4)

    report = await ctx.compact_report()

    assert report is not None and report.tokens_before == total and report.tokens_after == total - empty
    assert [(c.kind, c.step) for c in report.done] == [(CompactedKind.EMPTY_ROUND, 1), (CompactedKind.EMPTY_ROUND, 3)]
    assert report.counts() == {"empty_round": 2, "observation": 0, "thought": 0}
    assert "garbage" not in texts(ctx) and "could not be used" not in texts(ctx)
    assert "obs2 xxxx" in texts(ctx) and THOUGHT in ctx.messages[2].content, "nothing informative was touched"
    assert [m.role for m in ctx.messages] == ["system", "user", "assistant", "user", "assistant", "user"]


async def test_then_observations_then_thoughts_and_the_latest_round_stays_whole() -> None:
    ctx = make(budget_tokens=300)
    tool_round(ctx, 1)
    format_error_round(ctx, 2)
    tool_round(ctx, 3)
    tool_round(ctx, 4)
    system, latest = ctx.messages[0].content, [m.content for m in ctx.messages[-2:]]

    done = await ctx.compact()

    kinds = [c.kind for c in done]
    assert kinds[0] == CompactedKind.EMPTY_ROUND
    first_thought = kinds.index(CompactedKind.THOUGHT)
    assert kinds[1:first_thought] == [CompactedKind.OBSERVATION] * 2, "every old long observation before a thought"
    assert ctx.messages[0].content == system and ctx.messages[1].content == "TASK: find it"
    assert [m.content for m in ctx.messages[-2:]] == latest, "the latest round is kept verbatim"
    assert all(c.step != 4 for c in done)
    old_turn = ctx.messages[2].content
    assert old_turn.startswith(f"Thought: {THOUGHT_MARKER}") and 'Action: search\nAction Input: {"q": 1}' in old_turn
    assert ctx.messages[3].content.startswith("Observation: [observation from step 1 elided")
    assert ctx.prompt_tokens() <= 300 or len(done) == 5, "stops under the threshold or when nothing is left"


async def test_function_calling_empty_round_leaves_with_its_answers() -> None:
    ctx = make("function_calling", budget_tokens=250)
    tool_round(ctx, 1, size=100)
    refused = ToolCall(id="r2", name="search", arguments={"q": 1})
    ctx.add_assistant(None, [refused], step=2)
    ctx.add_observations(2, [(refused, "Refused: you already called search with these arguments " + "r" * 400)])
    ctx.mark_empty_round(2)
    tool_round(ctx, 3, size=100)

    done = await ctx.compact()

    assert [(c.kind, c.step) for c in done] == [(CompactedKind.EMPTY_ROUND, 2)]
    ids = [call.id for m in ctx.messages if m.role == "assistant" for call in m.tool_calls or []]
    answered = [m.tool_call_id for m in ctx.messages if m.role == "tool"]
    assert ids == answered == ["c1", "c3"], "no unanswered tool call and no orphan answer"


async def test_the_latest_empty_round_is_kept_even_when_still_over() -> None:
    ctx = make(budget_tokens=10)
    tool_round(ctx, 1, size=10)
    format_error_round(ctx, 2)

    done = await ctx.compact()

    assert all(c.step != 2 for c in done)
    assert ctx.messages[-1].content.startswith("Your last reply could not be used (round 2)")
