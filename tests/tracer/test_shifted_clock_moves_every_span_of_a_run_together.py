"""A backdated run (the demo's history) must move as a whole: every span, event and exception of
the run stamped by the shifted clock, durations and nesting as measured, and runs outside the
shift (another task, or after the block) on the real clock."""

from __future__ import annotations

import asyncio
import time

import pytest

from kernel import Agent, ScriptedLLM, tool
from tracer import spans
from tracer.clock import offset_ns, shifted

DAY_NS = 86_400 * 10**9


@tool
async def slow_lookup(city: str) -> str:
    """A lookup that takes a measurable moment."""
    await asyncio.sleep(0.05)
    return f"sunny in {city}"


def _agent() -> Agent:
    llm = ScriptedLLM(['Action: slow_lookup\nAction Input: {"city": "Oslo"}', "Final Answer: sunny"])
    return Agent("weather", "1.0", llm, [slow_lookup])


def test_every_span_of_a_shifted_run_moves_by_the_shift_and_keeps_its_duration(memory_handle) -> None:
    before = time.time_ns()
    with shifted(-14 * 86_400):
        result = asyncio.run(_agent().run("Weather in Oslo?"))
    after = time.time_ns()
    assert result.ok
    finished = memory_handle.memory_exporter.get_finished_spans()
    assert len(finished) >= 5
    for span in finished:
        assert before - 14 * DAY_NS <= span.start_time <= span.end_time <= after - 14 * DAY_NS, span.name
    run = next(s for s in finished if s.parent is None)
    for span in finished:
        assert run.start_time <= span.start_time and span.end_time <= run.end_time, span.name
    tool_span = next(s for s in finished if s.name.startswith("execute_tool"))
    assert 0.05e9 <= tool_span.end_time - tool_span.start_time < 5e9  # measured, not shifted away
    assert offset_ns() == 0  # the block restores the real clock


def test_events_and_exceptions_are_stamped_on_the_shifted_clock(memory_handle) -> None:
    with shifted(-86_400), pytest.raises(KeyError), spans.run_span("a"), spans.tool_span("boom"):
        raise KeyError("missing")
    tool_span = next(s for s in memory_handle.memory_exporter.get_finished_spans() if s.name.startswith("execute_tool"))
    (event,) = [e for e in tool_span.events if e.name == "exception"]
    assert tool_span.start_time <= event.timestamp <= tool_span.end_time
    assert event.timestamp < time.time_ns() - DAY_NS + 60 * 10**9


def test_a_concurrent_unshifted_run_stays_on_the_real_clock(memory_handle) -> None:
    async def both() -> None:
        async def old() -> None:
            with shifted(-7 * 86_400):
                await _agent().run("Weather in Oslo?")

        await asyncio.gather(old(), _agent().run("Weather in Oslo?"))

    now = time.time_ns()
    asyncio.run(both())
    roots = [s for s in memory_handle.memory_exporter.get_finished_spans() if s.parent is None]
    assert len(roots) == 2
    ages_days = sorted(round((now - s.start_time) / DAY_NS) for s in roots)
    assert ages_days == [0, 7]
