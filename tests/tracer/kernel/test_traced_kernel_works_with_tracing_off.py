"""With nothing set up the kernel runs on the OTel no-op tracer: same result, no trace id, no
spans anywhere. `tracing_disabled()` keeps runs out of an active pipeline, and with content
capture off a traced run carries no content attribute at all."""

from __future__ import annotations

from kernel import telemetry
from kernel.llm import ResilientLLM, ScriptedLLM
from tests.tracer.kernel.kernel_runs import act, agent, final
from tracer import conventions as c


def _llm() -> ScriptedLLM:
    return ScriptedLLM([act("add", a=2, b=3), act("big", n=300), final("5")])


async def test_nothing_set_up_same_result_and_no_trace_id() -> None:
    untraced = await agent(_llm(), observation_max_tokens=50).run("t")
    assert untraced.ok and untraced.trace_id is None
    assert [s.kind for s in untraced.steps] == ["tool", "tool", "finish"]
    assert "tokens truncated" in untraced.steps[1].observation_text
    resilient = await agent(ResilientLLM([_llm()])).run("t")
    assert resilient.ok and resilient.trace_id is None


async def test_tracing_disabled_emits_nothing_into_an_active_pipeline(memory_handle) -> None:
    with telemetry.tracing_disabled():
        result = await agent(ResilientLLM([_llm()])).run("t")
    assert result.ok and result.trace_id is None
    assert memory_handle.memory_exporter.get_finished_spans() == ()
    traced = await agent(_llm()).run("t")  # and the switch is scoped: tracing is back after it
    assert traced.trace_id is not None and len(memory_handle.memory_exporter.get_finished_spans()) == 14


async def test_capture_off_records_no_content(memory_handle_factory) -> None:
    handle = memory_handle_factory(capture_content=False)
    result = await agent(_llm()).run("secret task text")
    assert result.ok
    finished = handle.memory_exporter.get_finished_spans()
    assert len(finished) == 14
    for span in finished:
        assert not (set(span.attributes) & c.CONTENT_ATTRIBUTES), span.name
    run = next(s for s in finished if s.name == "invoke_agent tester")
    assert run.attributes[c.RUN_STEPS] == 3 and run.attributes[c.RUN_OK] is True


def test_global_providers_installed_later_get_the_runs_metrics_and_spans() -> None:
    """The no-op fast path is decided per call: an app that installs its own global SDK meter or
    tracer provider (without tracer.setup) after the kernel is imported still gets the GenAI
    metrics and the spans. In a subprocess: a global provider can be installed once per process."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent('''
        import asyncio
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from kernel.agent import Agent
        from kernel.llm import ScriptedLLM

        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader

        before = asyncio.run(Agent("g", "1", ScriptedLLM(["Final Answer: x"])).run("t"))
        assert before.ok and before.trace_id is None
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        metered = asyncio.run(Agent("g", "1", ScriptedLLM(["Final Answer: x"])).run("t"))
        assert metered.trace_id is None  # still no spans: only a meter provider is installed
        data = reader.get_metrics_data()
        got = {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
        assert got["gen_ai.client.operation.duration"].data.data_points[0].count == 1, got
        assert sum(p.sum for p in got["gen_ai.client.token.usage"].data.data_points) == (
            metered.usage.input_tokens + metered.usage.output_tokens)
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        after = asyncio.run(Agent("g", "1", ScriptedLLM(["Final Answer: x"])).run("t"))
        names = sorted(s.name for s in exporter.get_finished_spans())
        assert after.trace_id is not None, after
        assert names == ["budget_check", "chat scripted", "invoke_agent g", "step 1"], names
        print("ok")
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
