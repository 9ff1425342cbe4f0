"""A memory store that fails must cost a run its memories, never the run: the recall is skipped with
a warning and a failing `remember` is an error observation the model reads. A shadow run (policy
`Shadow`) must not write memories, because `remember` is a side-effect tool."""

from __future__ import annotations

import json
from pathlib import Path

from kernel.agent import Agent
from kernel.llm import ScriptedLLM
from kernel.memory import LongTermMemory, SQLiteMemoryStore
from kernel.policy import Shadow
from tracer.conventions import ToolDecision


def remember(key: str, value: str) -> str:
    return f"Thought: keep it\nAction: remember\nAction Input: {json.dumps({'key': key, 'value': value})}"


async def test_a_closed_store_leaves_the_run_ok_and_the_failed_write_visible(tmp_path: Path, caplog) -> None:
    store = SQLiteMemoryStore(tmp_path / "m.sqlite")
    store.close()  # every later statement raises sqlite3.ProgrammingError
    llm = ScriptedLLM([remember("carrier", "DHL"), "Final Answer: noted"])
    result = await Agent("a", "1", llm, memory=LongTermMemory(store)).run("ship with DHL", user_id="u")
    assert result.ok and result.answer == "noted"
    obs = result.steps[0].observations[0]
    assert obs.is_error and obs.tool_name == "remember"
    assert "memory recall failed" in caplog.text


async def test_a_shadow_run_records_the_remember_call_but_writes_nothing(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "m.sqlite")
    policy = Shadow()
    llm = ScriptedLLM([remember("carrier", "DHL"), "Final Answer: noted"])
    result = await Agent("a", "1", llm, policy=policy, memory=LongTermMemory(store)).run("ship with DHL", user_id="u")
    assert result.ok
    assert result.steps[0].observations[0].decision == ToolDecision.SHADOWED
    assert [c.name for c in policy.calls] == ["remember"]
    assert store.since("a@1/u", 0) == []
