"""A stored run, replayed through the real agent loop, must take exactly the same path again."""

from __future__ import annotations

import pytest

from kernel.llm import ReplayLLM, ScriptedLLM
from kernel.types import LLMResponse, RunResult, ToolCall

agent_mod = pytest.importorskip("kernel.agent")
tools_mod = pytest.importorskip("kernel.tools")


async def _search(q: str) -> str:
    return f"results for {q}"


SEARCH = tools_mod.tool(name="search", description="Search the web.")(_search)

SCRIPTS = {
    "text": [
        'Thought: look it up\nAction: search\nAction Input: {"q": "paris"}',
        "blah blah, no format at all",
        "Thought: done\nFinal Answer: sunny\nand warm",
    ],
    "function_calling": [
        LLMResponse(text="look it up", tool_calls=[ToolCall(id="c1", name="search", arguments={"q": "paris"}),
                                                   ToolCall(id="c2", name="search", arguments={"q": "lyon"})]),
        LLMResponse(tool_calls=[ToolCall(id="c3", name="search", arguments={"_raw": "{bad"})],
                    format_error="tool call 'search' (c3) arguments are not valid JSON"),
        "Final Answer: sunny\nand warm",
    ],
}


def _path(run: RunResult) -> list[tuple]:
    """Everything about a run that is not wall-clock timing. The feedback text of an unparsable step
    is left out: the raw reply is not recorded, so its parse error message is re-stated on replay."""
    return [
        (s.index, s.kind, s.parse, s.thought, s.calls, s.answer,
         None if s.kind == "format_error" else s.observation_text, s.model, s.usage,
         s.cost_usd, [(o.tool_call_id, o.content, o.is_error) for o in s.observations])
        for s in run.steps
    ]


@pytest.mark.parametrize("mode", ["text", "function_calling"])
async def test_replayed_run_matches_the_original(mode: str) -> None:
    original = await agent_mod.Agent("a", "1", ScriptedLLM(SCRIPTS[mode], model="gpt-4o-mini"), [SEARCH],
                                     mode=mode).run("weather?")
    assert original.ok and original.answer == "sunny\nand warm"
    stored = RunResult.from_json(original.to_json())

    replay = ReplayLLM(stored)
    again = await agent_mod.Agent("a", "1", replay, [SEARCH], mode=mode).run("weather?")

    assert _path(again) == _path(original)
    assert (again.ok, again.stop_reason, again.answer) == (original.ok, original.stop_reason, original.answer)
    assert again.usage == original.usage and again.cost_usd == pytest.approx(original.cost_usd)
    assert replay.remaining == 0
