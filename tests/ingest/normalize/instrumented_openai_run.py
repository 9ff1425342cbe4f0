"""Run the real `openai` client under ONE OpenAI instrumentation against the fake server and write
the exported spans, as a real OTLP request body, to stdout.

Why a separate process per instrumentation: each patches the `openai` module globally and not all
of them undo it completely on `uninstrument()` (OpenLLMetry leaves a wrapper behind), so sharing a
process would let one client's spans leak into another's test.

Usage: python -m tests.ingest.normalize.instrumented_openai_run {official|openinference|openllmetry}
"""

from __future__ import annotations

import importlib
import os
import sys

INSTRUMENTATIONS = {
    "official": "opentelemetry.instrumentation.openai_v2",
    "openinference": "openinference.instrumentation.openai",
    "openllmetry": "opentelemetry.instrumentation.openai",
}
ENV = {
    "official": {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
    },
}
# The scenario's usage numbers (prompt, completion, cached) — the test asserts their sums.
TOOL_CALL_USAGE = (40, 12, 8)
PLAIN_USAGE = (60, 8, 0)
STREAM_USAGE = (7, 3, 0)
FAILING_MODEL = "gpt-4.1-mini"
MODEL = "gpt-4o-mini"
RESPONSE_MODEL = "gpt-4o-mini-2024-07-18"
STREAM_TEXT = "streamed reply in words"
MSG = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def main(which: str) -> bytes:
    os.environ.update(ENV.get(which, {}))
    import openai
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.support.fake_openai import (
        FakeOpenAI,
        HttpErrorReply,
        TextReply,
        ToolCallSpec,
        ToolCallsReply,
        Usage,
    )

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": f"client-{which}"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = importlib.import_module(INSTRUMENTATIONS[which]).OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    with FakeOpenAI() as fake:
        fake.enqueue(
            ToolCallsReply(
                [ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_time", {"tz": "CET"})],
                usage=Usage(*TOOL_CALL_USAGE),
                response_model=RESPONSE_MODEL,
            ),
            TextReply("It is sunny in Paris.", usage=Usage(*PLAIN_USAGE)),
            TextReply(STREAM_TEXT, usage=Usage(*STREAM_USAGE)),
            model=MODEL,
        )
        fake.always(FAILING_MODEL, HttpErrorReply(500, "fake upstream failure"))
        client = openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)
        client.chat.completions.create(model=MODEL, messages=MSG, tools=TOOLS)
        client.chat.completions.create(model=MODEL, messages=MSG)
        stream = client.chat.completions.create(
            model=MODEL, messages=MSG, stream=True, stream_options={"include_usage": True}
        )
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        if text != STREAM_TEXT:
            raise AssertionError(f"stream came back as {text!r}")
        try:
            client.chat.completions.create(model=FAILING_MODEL, messages=MSG)
        except openai.InternalServerError:
            pass
        else:
            raise AssertionError("the failing model did not fail")
    instrumentor.uninstrument()
    provider.shutdown()
    return encode_spans(exporter.get_finished_spans()).SerializeToString()


if __name__ == "__main__":
    sys.stdout.buffer.write(main(sys.argv[1]))
