"""The loop must work the same in text mode (ReAct text, tools in the prompt) and in native
function-calling mode (OpenAI `tools`, tool messages), truncate what the model sees while keeping
the raw observation, and prefer reported usage over estimates."""

from __future__ import annotations

import json

import pytest

from kernel.agent import Agent
from kernel.llm import ScriptedLLM
from kernel.loop_guard import LoopGuard
from kernel.tools import tool
from kernel.types import LLMResponse, ToolCall, Usage
from tracer.conventions import ParseStatus, StepKind, StopReason


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def dump(n: int) -> str:
    """Returns a long text."""
    return "\n".join(f"line {i}: " + "x" * 60 for i in range(n))


def act(name: str, **args: object) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


async def test_text_mode_describes_tools_in_the_prompt_and_sends_no_tools_param() -> None:
    llm = ScriptedLLM([act("add", a=2, b=3), "Thought: done\nFinal Answer: 5"])
    result = await Agent("a", "1", llm, [add], system_prompt="Be exact.").run("2+3?")
    assert result.ok and result.answer == "5"
    first = llm.calls[0]
    assert first.tools is None
    system = first.messages[0]
    assert system.role == "system" and system.content.startswith("Be exact.")
    assert "- add: Add two integers." in system.content and "Action Input:" in system.content
    assert first.messages[1].content == "2+3?"
    second = llm.calls[1].messages
    assert second[2].role == "assistant" and "Action: add" in second[2].content
    assert second[3].content == "Observation: 5"


async def test_function_calling_mode_uses_tools_param_and_tool_messages() -> None:
    llm = ScriptedLLM(
        [
            LLMResponse(tool_calls=[ToolCall(id="call_x1", name="add", arguments={"a": 2, "b": 3})]),
            LLMResponse(text="The sum is 5."),
        ]
    )
    agent = Agent("a", "1", llm, [add], mode="function_calling", system_prompt="Be exact.")
    result = await agent.run("2+3?")
    assert result.ok and result.answer == "The sum is 5."
    assert llm.calls[0].tools == [add.openai_definition()]
    assert llm.calls[0].messages[0].content == "Be exact."
    msgs = llm.calls[1].messages
    assert msgs[2].role == "assistant" and msgs[2].tool_calls[0].id == "call_x1"
    assert msgs[3].role == "tool" and msgs[3].tool_call_id == "call_x1" and msgs[3].content == "5"
    assert result.steps[0].calls[0].id == "call_x1"


async def test_function_calling_parallel_calls_each_get_an_answer() -> None:
    llm = ScriptedLLM(
        [
            LLMResponse(tool_calls=[ToolCall(id="c1", name="add", arguments={"a": 1, "b": 1}),
                                    ToolCall(id="c2", name="nope", arguments={})]),
            LLMResponse(text="2"),
        ]
    )
    result = await Agent("a", "1", llm, [add], mode="function_calling").run("t")
    assert result.ok
    tool_msgs = [m for m in llm.calls[1].messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_msgs] == ["c1", "c2"]
    assert tool_msgs[0].content == "2" and "unknown_tool" in tool_msgs[1].content
    assert [o.is_error for o in result.steps[0].observations] == [False, True]


async def test_function_calling_bad_json_arguments_become_a_format_error_step() -> None:
    llm = ScriptedLLM(
        [
            LLMResponse(tool_calls=[ToolCall(id="c1", name="add", arguments={"_raw": '{"a": 1,'})]),
            LLMResponse(tool_calls=[ToolCall(id="c2", name="add", arguments={"a": 1, "b": 2})]),
            LLMResponse(text="3"),
        ]
    )
    result = await Agent("a", "1", llm, [add], mode="function_calling").run("t")
    assert result.ok and result.answer == "3"
    bad = result.steps[0]
    assert bad.kind == StepKind.FORMAT_ERROR and bad.parse == ParseStatus.UNPARSABLE
    assert "not valid JSON" in bad.observation_text
    # the broken call is not replayed (it would need a tool answer); the feedback is a user message
    sent = llm.calls[1].messages
    assert sent[-2].role == "assistant" and sent[-2].tool_calls == []
    assert sent[-1].role == "user" and "not valid JSON" in sent[-1].content


async def test_observation_is_truncated_for_the_model_but_kept_raw() -> None:
    llm = ScriptedLLM([act("dump", n=200), "Final Answer: ok"])
    result = await Agent("a", "1", llm, [dump], observation_max_tokens=100).run("t")
    assert result.ok
    step = result.steps[0]
    raw = step.observations[0].content
    assert raw.count("\n") == 199, "the raw observation is kept whole"
    assert len(step.observation_text) < len(raw) and "tokens truncated" in step.observation_text
    assert step.observation_text.startswith("line 0:") and step.observation_text.endswith("x" * 60)
    assert llm.calls[1].messages[-1].content == "Observation: " + step.observation_text


async def test_reported_usage_wins_and_missing_usage_is_estimated() -> None:
    reported = Usage(input_tokens=1234, output_tokens=56, cached_input_tokens=7)

    class NoUsageLLM:
        """A real minimal adapter whose provider reports no usage."""

        model = "gpt-4o-mini"

        def __init__(self) -> None:
            self.replies = [LLMResponse(text=act("add", a=1, b=2), usage=reported), LLMResponse(text="Final Answer: 3")]

        async def complete(self, messages, tools=None, *, temperature=None, max_tokens=None):
            return self.replies.pop(0)

    result = await Agent("a", "1", NoUsageLLM(), [add]).run("t")
    assert result.ok
    first, second = result.steps
    assert first.usage == reported
    assert second.usage.estimated is True and second.usage.input_tokens > 0 and second.usage.output_tokens > 0
    assert result.usage.input_tokens == 1234 + second.usage.input_tokens
    assert result.usage.estimated is True
    assert result.models == ["gpt-4o-mini"] and first.model == "gpt-4o-mini"
    assert first.cost_usd > 0 and result.cost_usd == pytest.approx(first.cost_usd + second.cost_usd)


async def test_premature_finish_next_to_a_tool_call_runs_the_tool() -> None:
    text = (
        '[{"action": "add", "args": {"a": 1, "b": 1}}, {"action": "finish", "args": {"answer": "guess"}}]'
    )
    llm = ScriptedLLM([text, "Final Answer: 2"])
    result = await Agent("a", "1", llm, [add], loop_guard=LoopGuard()).run("t")
    assert result.ok and result.answer == "2"
    assert result.steps[0].kind == StepKind.TOOL


def test_run_sync_outside_an_event_loop() -> None:
    llm = ScriptedLLM(["Final Answer: sync"])
    result = Agent("a", "1", llm).run_sync("t", conversation_id="conv-1", user_id="u-1")
    assert result.ok and result.answer == "sync"
    assert result.conversation_id == "conv-1" and result.user_id == "u-1" and result.task == "t"


async def test_run_sync_inside_a_running_loop_uses_a_helper_thread() -> None:
    llm = ScriptedLLM(["Final Answer: nested"])
    result = Agent("a", "1", llm).run_sync("t")
    assert result.ok and result.answer == "nested"


def test_bad_configuration_fails_at_construction() -> None:
    llm = ScriptedLLM(["x"])
    with pytest.raises(ValueError):
        Agent("a", "1", llm, mode="chat")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Agent("a", "1", llm, observation_max_tokens=0)


async def test_runs_share_no_state() -> None:
    llm = ScriptedLLM(policy=lambda m, t: act("add", a=1, b=1) if len(m) == 2 else "Final Answer: 2")
    agent = Agent("a", "1", llm, [add])
    first, second = await agent.run("t"), await agent.run("t")
    assert first.ok and second.ok
    # the loop guard of the first run must not block the identical call in the second
    assert second.steps[0].kind == StepKind.TOOL and second.stop_reason == StopReason.FINISH


async def test_text_mode_model_answering_with_native_calls_keeps_a_readable_transcript() -> None:
    llm = ScriptedLLM(
        [LLMResponse(tool_calls=[ToolCall(id="n1", name="add", arguments={"a": 4, "b": 5})]), "Final Answer: 9"]
    )
    result = await Agent("a", "1", llm, [add]).run("t")
    assert result.ok and result.answer == "9"
    turn = llm.calls[1].messages[2]
    assert turn.role == "assistant" and turn.content == 'Action: add\nAction Input: {"a": 4, "b": 5}'
    assert llm.calls[1].messages[3].content == "Observation: 9"


def test_agent_accepts_no_tools() -> None:
    result = Agent("a", "1", ScriptedLLM(["Final Answer: fine"]), None).run_sync("t")
    assert result.ok and result.answer == "fine"


async def test_side_effect_policy_is_applied_to_the_runs_tool_calls() -> None:
    from kernel.policy import DenyAll, Shadow

    sent: list[str] = []

    @tool(side_effect=True)
    async def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return "sent"

    script = [act("send_email", to="a@example.com"), "Final Answer: done"]
    shadow = Shadow()
    shadowed = await Agent("a", "1", ScriptedLLM(list(script)), [send_email], policy=shadow).run("t")
    assert shadowed.ok and sent == [] and [c.name for c in shadow.calls] == ["send_email"]
    assert shadowed.steps[0].observations[0].decision.value == "shadowed"

    denied = await Agent("a", "1", ScriptedLLM(list(script)), [send_email], policy=DenyAll()).run("t")
    assert sent == [] and denied.steps[0].observations[0].is_error
    assert "denied" in denied.steps[0].observation_text
