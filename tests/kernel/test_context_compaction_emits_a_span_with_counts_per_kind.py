"""A compaction during a real run is visible: one `compact_context` span under the step it ran
before, with the watermark, the prompt's tokens before and after, and how many empty rounds,
observations and thoughts it dropped; and the default budget's watermark compacts a long run
well before a 128k window fills."""

from __future__ import annotations

import json

from kernel import Agent, Budget
from kernel.llm import ScriptedLLM
from kernel.tokens import estimate_messages_tokens
from kernel.tools import tool
from tests.tracer.conftest import memory_handle  # noqa: F401 - fixture
from tracer import conventions as c

THOUGHT = "the next page should tell me more about the contract terms and their dates " * 2


@tool
async def page(n: int) -> str:
    """Return page n of a long document."""
    return f"PAGE {n} " + ("lorem ipsum " * 150)


@tool
async def huge(n: int) -> str:
    """Return a very long page."""
    return f"HUGE {n} " + ("word " * 12_000)


def act(name: str, n: int) -> str:
    return f"Thought: {THOUGHT}{n}\nAction: {name}\nAction Input: {json.dumps({'n': n})}"


async def test_the_compaction_span_counts_what_was_dropped_per_kind(memory_handle) -> None:  # noqa: F811
    script = ["I am not sure what to do " * 20, act("page", 1), act("page", 2), act("page", 3),
              "Final Answer: read"]
    llm = ScriptedLLM(script)
    agent = Agent("reader", "1", llm, [page], budget=Budget(context_watermark_tokens=900),
                  compaction_min_tokens=100)

    result = await agent.run("read the document")

    assert result.ok and result.answer == "read", result.error
    spans = list(memory_handle.memory_exporter.get_finished_spans())
    compactions = sorted((s for s in spans if s.name == c.SPAN_COMPACT), key=lambda s: s.start_time)
    assert compactions, "the prompt passed 900 tokens: a compaction must be traced"
    by_id = {s.context.span_id: s for s in spans}
    for span in compactions:
        a = span.attributes
        assert by_id[span.parent.span_id].name.startswith("step ")
        assert a[c.COMPACT_THRESHOLD_TOKENS] == 900
        assert a[c.COMPACT_TOKENS_BEFORE] > 900 and a[c.COMPACT_TOKENS_AFTER] < a[c.COMPACT_TOKENS_BEFORE]
        assert set(c.COMPACT_DROPPED.values()) <= set(a)
    first = compactions[0].attributes
    assert first[c.COMPACT_DROPPED[c.CompactedKind.EMPTY_ROUND]] == 1, "the format-error round goes first"
    dropped = {kind: sum(s.attributes[key] for s in compactions) for kind, key in c.COMPACT_DROPPED.items()}
    assert dropped[c.CompactedKind.OBSERVATION] >= 1
    # what the model saw next: the empty round is gone, system, task and the latest observation stay
    seen = llm.calls[-1].messages
    assert "I am not sure" not in "".join(m.content or "" for m in seen)
    assert seen[0].content == llm.calls[0].messages[0].content and seen[1].content == "read the document"
    assert seen[-1].content.startswith("Observation: PAGE 3 lorem")
    assert result.steps[0].kind == "format_error", "the run's record keeps every step"


async def test_the_default_budget_compacts_a_long_run_near_32k_tokens() -> None:
    assert Budget().context_watermark_tokens == 32_000
    llm = ScriptedLLM([act("huge", n) for n in range(1, 19)] + ["Final Answer: done"])
    agent = Agent("reader", "1", llm, [huge], budget=Budget(max_steps=20))

    result = await agent.run("read everything")

    assert result.ok, result.error
    sizes = [estimate_messages_tokens(call.messages) for call in llm.calls]
    assert max(sizes) <= 32_000 + agent.observation_max_tokens + 200, "compacted back under the budget"
    assert sum(sizes) < 18 * 32_000
    last = "".join(m.content or "" for m in llm.calls[-1].messages)
    assert "[observation from step 1 elided" in last
