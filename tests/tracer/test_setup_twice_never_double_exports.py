"""A second `setup()` returns the active handle (no second exporter); after shutdown it rebuilds.

Also: with nothing set up the helpers record nothing and cost no SDK import, and an installed
global provider is used when the caller configured OpenTelemetry themselves.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import tracer
from tracer import spans


def test_second_setup_returns_the_same_handle_and_spans_are_exported_once(caplog):
    first = tracer.setup(service_name="one", endpoint="memory")
    try:
        second = tracer.setup(service_name="two", endpoint="memory")
        assert second is first
        assert "service_name" in caplog.text  # the ignored difference is reported, not swallowed
        assert tracer.setup(service_name="one", endpoint="memory") is first
        with spans.run_span("a"):
            pass
        assert len(first.memory_exporter.get_finished_spans()) == 1
        assert first.stats().exported == 1
    finally:
        first.shutdown()
    third = tracer.setup(service_name="three", endpoint="memory")
    try:
        assert third is not first and tracer.active_handle() is third
        with spans.run_span("b"):
            pass
        assert [s.name for s in third.memory_exporter.get_finished_spans()] == ["invoke_agent b"]
        assert len(first.memory_exporter.get_finished_spans()) == 1  # the old pipeline got nothing
    finally:
        assert third.shutdown() and third.shutdown()  # idempotent


def test_nothing_set_up_records_nothing_and_imports_no_sdk():
    code = textwrap.dedent(
        """
        import sys
        from tracer import spans
        with spans.run_span("a", task="t") as run:
            with spans.step_span(1) as step, spans.chat_span(model="m") as chat:
                chat.record_response(input_tokens=1, output_tokens=1, output_text="x")
                step.record(kind="tool", thought="t")
            run.finish(ok=True, stop_reason="finish", steps=1)
        assert run.recording is False and run.trace_id is None
        assert "opentelemetry.sdk" not in sys.modules, "the SDK was imported"
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_global_provider_configured_by_the_user_is_used_without_setup():
    code = textwrap.dedent(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from tracer import spans
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        with spans.run_span("a") as run:
            pass
        assert [s.name for s in exporter.get_finished_spans()] == ["invoke_agent a"], exporter.get_finished_spans()
        assert run.trace_id is not None
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_install_global_installs_once():
    code = textwrap.dedent(
        """
        from opentelemetry import trace
        import tracer
        h = tracer.setup(endpoint="memory", install_global=True)
        assert trace.get_tracer_provider() is h.provider
        trace.get_tracer("someone-else").start_span("theirs").end()
        assert [s.name for s in h.memory_exporter.get_finished_spans()] == ["theirs"]
        h.shutdown()
        h2 = tracer.setup(endpoint="memory", install_global=True)  # refused with a warning, no crash
        assert trace.get_tracer_provider() is h.provider
        h2.shutdown()
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "already installed" in out.stderr
