"""With `Agent(memory=...)`, a fact the model stores with the `remember` tool in one run reaches the
system prompt of the same user's next run (over real HTTP to the fake OpenAI server), and never
another user's; the run's trace holds the recall and the write as memory spans."""

from __future__ import annotations

from pathlib import Path

from kernel.agent import Agent
from kernel.memory import LongTermMemory, SQLiteMemoryStore
from tests.kernel.openai_adapters import adapter
from tests.support.fake_openai import TextReply, ToolCallSpec, ToolCallsReply
from tracer import conventions as c


def system_text(request: dict) -> str:
    return request["messages"][0]["content"]


async def test_a_remembered_fact_is_recalled_for_the_same_user_only(fake, tmp_path: Path, memory_handle) -> None:
    memory = LongTermMemory(SQLiteMemoryStore(tmp_path / "support.sqlite"))
    agent = Agent("support", "1", adapter("m", fake.base_url, timeout_s=5), [], mode="function_calling",
                  memory=memory)
    fake.enqueue(
        ToolCallsReply([ToolCallSpec("remember", {"key": "preferred carrier", "value": "DHL express"}, id="r1")]),
        TextReply("Noted: DHL express."),
    )
    first = await agent.run("Please always ship my orders with DHL express.", user_id="alice")
    assert first.ok and first.steps[0].observations[0].content == "remembered 'preferred carrier'"
    assert "remember" in [t["function"]["name"] for t in fake.requests[0]["tools"]]
    assert "DHL" not in system_text(fake.requests[0])  # nothing was remembered yet

    fake.enqueue(TextReply("It ships with DHL express."), TextReply("I do not know your carrier."))
    again = await agent.run("Which carrier will ship my next order?", user_id="alice")
    other = await agent.run("Which carrier will ship my next order?", user_id="bob")
    assert again.ok and other.ok
    alice_system, bob_system = system_text(fake.requests[2]), system_text(fake.requests[3])
    assert "- preferred carrier: DHL express" in alice_system
    assert "DHL" not in bob_system

    spans = memory_handle.memory_exporter.get_finished_spans()
    runs = {s.context.trace_id: s for s in spans if s.name == "invoke_agent support"}
    [write] = [s for s in spans if s.name == "upsert_memory support"]
    assert write.attributes[c.GEN_AI_MEMORY_SCOPE] == "support@1/alice"
    assert write.attributes[c.GEN_AI_MEMORY_CONTENT] == "DHL express"
    assert write.context.trace_id == next(iter(runs))  # written inside the first run
    searches = [s for s in spans if s.name == "search_memory support"]
    assert len(searches) == 3 and all(s.context.trace_id in runs for s in searches)
    assert [s.attributes[c.GEN_AI_MEMORY_SEARCH_RESULT_COUNT] for s in searches] == [0, 1, 0]
