"""Real OTel SDK spans and log records (GenAI events) for the logs tests, built with the SDK's own
TracerProvider and LoggerProvider and encoded by the OTLP exporters' own encoders.

    spans, logs = chat_with_events(trace_id=...)          # one chat span + its message events
    encode_spans(spans) / encode_logs(logs)                 # the OTLP request messages
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import set_span_in_context

from tracer import conventions as c

__all__ = ["Chat", "chat_with_events", "encode_logs", "encode_spans", "log_provider", "span_provider"]


class _FixedTraceIds(IdGenerator):
    """The SDK's ids, except the trace id, which the test chooses (so requests can be matched)."""

    def __init__(self, trace_id: int) -> None:
        self._trace_id = trace_id

    def generate_span_id(self) -> int:
        return random.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._trace_id


def span_provider(trace_id: int | None = None) -> tuple[TracerProvider, InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    ids = _FixedTraceIds(trace_id) if trace_id is not None else None
    provider = TracerProvider(resource=Resource.create({c.SERVICE_NAME: "logs-tests"}), id_generator=ids)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def log_provider() -> tuple[LoggerProvider, InMemoryLogRecordExporter]:
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({c.SERVICE_NAME: "logs-tests"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    return provider, memory


@dataclass
class Chat:
    """What `chat_with_events` produced, with the ids the assertions need."""

    spans: Sequence[ReadableSpan]
    logs: Sequence[ReadableLogRecord]
    trace_hex: str
    agent_span_hex: str
    chat_span_hex: str


USER_TEXT = "What is the weather in Paris?"
SYSTEM_TEXT = "You are a terse weather bot."
ANSWER_TEXT = "Sunny, 24 degrees."


def chat_with_events(trace_id: int | None = None, evaluation: bool = True) -> Chat:
    """An agent span with one chat span under it, whose content is logged the pre-1.37 way (one event
    per message, `gen_ai.choice` for the answer) and, optionally, a `gen_ai.evaluation.result`."""
    trace_id = trace_id if trace_id is not None else random.getrandbits(128) or 1
    tracer_provider, spans = span_provider(trace_id)
    logger_provider, logs = log_provider()
    tracer = tracer_provider.get_tracer("logs-tests")
    logger = logger_provider.get_logger("logs-tests")
    with tracer.start_as_current_span("invoke_agent weather") as agent:
        agent.set_attribute(c.GEN_AI_OPERATION_NAME, c.OP_INVOKE_AGENT)
        agent.set_attribute(c.GEN_AI_AGENT_NAME, "weather")
        with tracer.start_as_current_span("chat gpt-4o-mini") as chat:
            chat.set_attribute(c.GEN_AI_OPERATION_NAME, c.OP_CHAT)
            chat.set_attribute(c.GEN_AI_REQUEST_MODEL, "gpt-4o-mini")
            ctx = set_span_in_context(chat)
            logger.emit(event_name=c.GEN_AI_EVENT_SYSTEM_MESSAGE, body={"content": SYSTEM_TEXT}, context=ctx)
            logger.emit(event_name=c.GEN_AI_EVENT_USER_MESSAGE, body={"content": USER_TEXT}, context=ctx)
            logger.emit(
                event_name=c.GEN_AI_EVENT_CHOICE,
                body={"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER_TEXT}},
                context=ctx,
            )
            if evaluation:
                logger.emit(
                    event_name=c.GEN_AI_EVENT_EVALUATION_RESULT,
                    attributes={
                        c.GEN_AI_EVALUATION_NAME: "relevance",
                        c.GEN_AI_EVALUATION_SCORE_VALUE: 0.75,
                        c.GEN_AI_EVALUATION_SCORE_LABEL: "relevant",
                        c.GEN_AI_EVALUATION_EXPLANATION: "answers the weather question",
                    },
                    context=ctx,
                )
    tracer_provider.shutdown()
    logger_provider.shutdown()
    finished = spans.get_finished_spans()
    chat_span = next(s for s in finished if s.name.startswith("chat"))
    agent_span = next(s for s in finished if s.name.startswith("invoke_agent"))
    return Chat(
        spans=finished,
        logs=logs.get_finished_logs(),
        trace_hex=format(trace_id, "032x"),
        agent_span_hex=format(agent_span.context.span_id, "016x"),
        chat_span_hex=format(chat_span.context.span_id, "016x"),
    )
