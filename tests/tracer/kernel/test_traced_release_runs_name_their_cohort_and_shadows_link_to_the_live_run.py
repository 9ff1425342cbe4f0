"""Spans of a gray release: the routed run span (a child of the caller's request span) carries the
release and cohort, a sub-agent it calls does not claim them, and the shadow run is a new trace
(never under the request span) with mode shadow, cohort shadow, the live run's trace id and an OTel
link to the live run span."""

from __future__ import annotations

from opentelemetry import trace

from kernel.agent import Agent
from kernel.llm import ScriptedLLM
from kernel.release import Release
from kernel.tools import tool
from tests.support.scripted_runs import act, final
from tracer import conventions as c


async def test_release_attributes_and_the_shadow_link(memory_handle) -> None:  # type: ignore[no-untyped-def]
    helper = Agent("helper", "1", ScriptedLLM([final("inner")] * 2))

    @tool
    async def ask_helper(q: str) -> str:
        """Ask the helper agent."""
        return (await helper.run(q)).answer or ""

    def desk(version: str) -> Agent:
        return Agent("desk", version, ScriptedLLM([act("ask_helper", q="x"), final("done")] * 2), [ask_helper])

    release = Release("desk-2", desk("1"), desk("2"), share=1.0, shadow=desk("2"))
    request = memory_handle.tracer.start_span("POST /chat")
    with trace.use_span(request, end_on_exit=True):
        live = await release.run("hello", user_id="u1")
    [mirror] = await release.drain(10)
    assert memory_handle.force_flush(5)
    spans = list(memory_handle.memory_exporter.get_finished_spans())
    runs = {s.context.trace_id: s for s in spans if s.name == "invoke_agent desk"}
    live_span = next(s for s in runs.values() if format(s.context.trace_id, "032x") == live.trace_id)
    shadow_span = next(s for s in runs.values() if format(s.context.trace_id, "032x") == mirror.result.trace_id)

    assert live_span.parent is not None and live_span.parent.span_id == request.get_span_context().span_id
    assert (live_span.attributes[c.RELEASE_NAME], live_span.attributes[c.RELEASE_COHORT]) == ("desk-2", "candidate")
    assert live_span.attributes[c.RUN_MODE] == "live"
    helpers = [s for s in spans if s.name == "invoke_agent helper"]
    assert len(helpers) == 2 and all(c.RELEASE_NAME not in s.attributes for s in helpers)

    assert shadow_span.parent is None and shadow_span.context.trace_id != live_span.context.trace_id
    assert shadow_span.attributes[c.RELEASE_COHORT] == "shadow" and shadow_span.attributes[c.RUN_MODE] == "shadow"
    assert shadow_span.attributes[c.RELEASE_PRIMARY_TRACE_ID] == live.trace_id
    [link] = shadow_span.links
    assert (link.context.trace_id, link.context.span_id) == (live_span.context.trace_id, live_span.context.span_id)
