"""Run the real `openai` client under the official openai-v2 instrumentation with message content
captured in EVENTS only (`event_only`, the latest-experimental semconv), against the fake OpenAI
server, exporting spans and log records with the SDK's real OTLP/HTTP exporters to a steplens
server. Prints the trace id. A second argument picks another content mode (`span_and_event`).

Why a subprocess: the instrumentation patches the `openai` module for the whole process (see
tests/ingest/normalize/instrumented_openai_run.py).

Usage: python -m tests.dashboards.openai_v2_event_only_run http://127.0.0.1:PORT [event_only|span_and_event]
"""

from __future__ import annotations

import os
import sys

QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris."
MODEL = "gpt-4o-mini"


def main(url: str, mode: str = "event_only") -> str:
    os.environ.update(
        {
            "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": mode,
        }
    )
    import openai
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from tests.support.fake_openai import FakeOpenAI, TextReply, ToolCallSpec, ToolCallsReply
    from tracer import conventions as c

    resource = Resource.create({c.SERVICE_NAME: "openai-v2-events"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=url + "/v1/traces")))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=url + "/v1/logs")))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    messages: list = [{"role": "user", "content": QUESTION}]
    with FakeOpenAI() as fake:
        fake.enqueue(ToolCallsReply([ToolCallSpec("get_weather", {"city": "Paris"})]), TextReply(ANSWER), model=MODEL)
        client = openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)
        with tracer_provider.get_tracer("agent").start_as_current_span("invoke_agent weather") as agent:
            agent.set_attribute(c.GEN_AI_OPERATION_NAME, c.OP_INVOKE_AGENT)
            first = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
            call = first.choices[0].message.tool_calls[0]
            messages += [first.choices[0].message.model_dump(exclude_none=True),
                         {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
            second = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
            if second.choices[0].message.content != ANSWER:
                raise AssertionError(f"unexpected answer {second.choices[0].message.content!r}")
            trace_id = format(agent.get_span_context().trace_id, "032x")
    instrumentor.uninstrument()
    tracer_provider.shutdown()
    logger_provider.shutdown()
    return trace_id


if __name__ == "__main__":
    print(main(*sys.argv[1:3]))
