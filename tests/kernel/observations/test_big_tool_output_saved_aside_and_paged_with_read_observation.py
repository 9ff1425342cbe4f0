"""A tool result over `BigObservations.limit_chars` must reach the model as its head plus a marker
(how much was cut, how to read on), `read_observation` must join the run's tools only then and
return the exact rest page by page, and the tool span must record the full size and that the
result was saved aside. Over real HTTP to the fake OpenAI server, spans from the real OTel SDK."""

from __future__ import annotations

import json

import pytest

from kernel.agent import Agent
from kernel.llm import ScriptedLLM
from kernel.observations import BigObservations, ObservationStore
from kernel.tools import tool
from tests.kernel.openai_adapters import adapter
from tests.support.fake_openai import TextReply, ToolCallSpec, ToolCallsReply
from tracer import conventions as c

EXPORT = "".join(f"row {i:05d};" for i in range(3000))  # 30,000 characters, every position unique


@tool
async def export_rows() -> str:
    """Export every row."""
    return EXPORT


@tool
async def small() -> str:
    """A short answer."""
    return "short"


def tool_message(request: dict, call_id: str) -> str:
    return next(m["content"] for m in request["messages"] if m.get("tool_call_id") == call_id)


def tool_names(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request["tools"]]


async def test_model_sees_the_head_and_marker_then_pages_the_rest(fake, memory_handle) -> None:
    settings = BigObservations(limit_chars=5000, head_chars=1000, page_chars=4000)
    agent = Agent("exporter", "1", adapter("m", fake.base_url, timeout_s=5), [export_rows, small],
                  mode="function_calling", big_observations=settings, observation_max_tokens=100_000)
    fake.enqueue(
        ToolCallsReply([ToolCallSpec("small", {}, id="s1")]),
        ToolCallsReply([ToolCallSpec("export_rows", {}, id="e1")]),
        ToolCallsReply([ToolCallSpec("read_observation", {"ref": "obs-1", "offset": 1000}, id="p1")]),
        ToolCallsReply([ToolCallSpec("read_observation", {"ref": "obs-1", "offset": 29_000, "length": 5000},
                                     id="p2")]),
        TextReply("3000 rows."),
    )
    result = await agent.run("How many rows are there?")
    assert result.ok and result.answer == "3000 rows."

    assert "read_observation" not in tool_names(fake.requests[0])  # nothing saved aside yet
    assert "read_observation" not in tool_names(fake.requests[1])
    shown = tool_message(fake.requests[2], "e1")
    assert shown.startswith(EXPORT[:1000]) and EXPORT[1000:1100] not in shown
    assert "showing characters 0-1000 of 30000" in shown and "29000 more saved aside as 'obs-1'" in shown
    assert "call read_observation with ref='obs-1', offset=1000" in shown
    assert "read_observation" in tool_names(fake.requests[2])

    page = tool_message(fake.requests[3], "p1")
    assert page == f"[obs-1: characters 1000-5000 of 30000; next offset=5000]\n{EXPORT[1000:5000]}"
    last = tool_message(fake.requests[4], "p2")
    assert last == f"[obs-1: characters 29000-30000 of 30000; this is the end]\n{EXPORT[29000:]}"
    assert result.steps[1].observations[0].content == EXPORT  # the run record keeps the full result

    spans = {s.name: s for s in memory_handle.memory_exporter.get_finished_spans()}
    big = dict(spans["execute_tool export_rows"].attributes)
    assert big[c.TOOL_RESULT_SAVED_ASIDE] is True and big[c.TOOL_RESULT_SIZE_CHARS] == 30_000
    assert big[c.TOOL_RESULT_REF] == "obs-1" and big[c.TOOL_RESULT_SHOWN_CHARS] == len(shown)
    assert c.TOOL_RESULT_SAVED_ASIDE not in spans["execute_tool small"].attributes
    assert c.TOOL_RESULT_SAVED_ASIDE not in spans["execute_tool read_observation"].attributes


async def test_text_mode_reads_on_and_an_unknown_ref_is_an_error_observation() -> None:
    def act(name: str, **args: object) -> str:
        return f"Thought: read\nAction: {name}\nAction Input: {json.dumps(args)}"

    llm = ScriptedLLM([act("export_rows"), act("read_observation", ref="obs-9"),
                       act("read_observation", ref="obs-1", offset=2000, length=10), "Final Answer: done"])
    agent = Agent("exporter", "1", llm, [export_rows], big_observations=BigObservations(limit_chars=2000,
                  head_chars=500, page_chars=1000))
    result = await agent.run("export")
    assert result.ok
    missing = result.steps[1].observations[0]
    assert missing.is_error and "no saved output 'obs-9'" in missing.content and "obs-1" in missing.content
    assert result.steps[2].observation_text.endswith(EXPORT[2000:2010])
    first = result.steps[0].observation_text
    assert first.startswith(EXPORT[:500]) and EXPORT[500:600] not in first and "offset=500" in first
    assert "read_observation" not in llm.calls[0].messages[0].content  # the tool list grew only when needed


def test_the_run_store_forgets_its_oldest_result_past_its_total_and_settings_are_checked() -> None:
    store = ObservationStore(BigObservations(limit_chars=10, head_chars=5, page_chars=10, max_saved_chars=25))
    assert store.maybe_save("x" * 10) is None
    first, second = store.maybe_save("1" * 20), store.maybe_save("2" * 20)
    assert (first.ref, second.ref) == ("obs-1", "obs-2")
    with pytest.raises(KeyError, match="obs-1"):
        store.read("obs-1", 0, None)
    assert store.read("obs-2", 15, None).endswith("22222")
    with pytest.raises(ValueError):
        BigObservations(limit_chars=100, page_chars=200)
