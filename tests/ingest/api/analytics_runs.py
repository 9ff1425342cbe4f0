"""Kernel-shaped runs with exactly known costs, errors and steps, emitted through the OTel SDK.

The spans follow design.md §2 (invoke_agent > step i > chat*, execute_tool*, truncate_observation*)
and are encoded by the OTLP exporter's own encoder, so the analytics tests read through the whole
real pipeline: OTLP/HTTP -> normalizer -> loader (derived columns, tool_calls) -> query API.
Each span gets its own 10 ms slot on a timeline, so "later LLM call" is unambiguous.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from tests.ingest.api.otlp_runs import T0, ns
from tracer import conventions as c

SLOT = timedelta(milliseconds=10)
TEST_MODEL = "acme-test"
# A price file for the server: $0.001 per input token, so carry cents are easy to compute by hand.
TEST_PRICES = f"""
as_of = "2025-01-01"
[models."{TEST_MODEL}"]
input = 1000.0
output = 2000.0
"""


@dataclass
class Chat:
    cost: float | None = None
    input_tokens: int = 100
    output_tokens: int = 10
    model: str = TEST_MODEL
    error_type: str | None = None
    error_message: str | None = None


@dataclass
class Tool:
    name: str
    arguments: dict[str, Any] | None = None
    result: str | None = None
    cost: float | None = None
    error_type: str | None = None
    error_message: str | None = None
    decision: str = c.ToolDecision.EXECUTED.value
    observation_tokens: int | None = None  # the truncate span's output tokens; None: no truncate span
    dropped_tokens: int = 0


@dataclass
class Step:
    chats: list[Chat] = field(default_factory=lambda: [Chat()])
    tools: list[Tool] = field(default_factory=list)
    action: str | None = None  # default: the tool's name, or `finish` without tools
    observation: str | None = None


@dataclass
class Run:
    steps: list[Step]
    agent: str = "cost_agent"
    version: str = "1.0"
    ok: bool = True
    stop_reason: str = c.StopReason.FINISH.value
    start: datetime = T0
    trace_id: str = ""
    mode: str | None = None  # steplens.run.mode; None: the run names no mode (as foreign clients)


class RunEmitter:
    """Emit runs as SDK spans; `request()` / `requests_one_span_each()` turn them into OTLP bodies."""

    def __init__(self, service: str = "agent-svc") -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({c.SERVICE_NAME: service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("steplens.tests.analytics")

    def _take(self) -> list[ReadableSpan]:
        spans = list(self.exporter.get_finished_spans())
        self.exporter.clear()
        return spans

    def request(self) -> ExportTraceServiceRequest:
        return encode_spans(self._take())

    def requests_one_span_each(self, reverse: bool = False) -> list[ExportTraceServiceRequest]:
        """Every finished span in its own request (end order, or reversed: root first)."""
        spans = self._take()
        if reverse:
            spans.reverse()
        return [encode_spans([s]) for s in spans]

    def run(self, spec: Run) -> Run:
        t = self.tracer
        clock = [spec.start]

        def tick() -> int:
            clock[0] += SLOT
            return ns(clock[0])

        root = t.start_span(
            c.SPAN_RUN.format(agent=spec.agent),
            start_time=ns(spec.start),
            attributes={
                c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
                c.GEN_AI_AGENT_NAME: spec.agent,
                c.GEN_AI_AGENT_VERSION: spec.version,
                c.RUN_OK: spec.ok,
                c.RUN_STOP_REASON: spec.stop_reason,
                c.RUN_STEPS: len(spec.steps),
                **({c.RUN_MODE: spec.mode} if spec.mode is not None else {}),
            },
        )
        spec.trace_id = format(root.get_span_context().trace_id, "032x")
        rctx = trace.set_span_in_context(root)
        for index, step_spec in enumerate(spec.steps):
            action = step_spec.action or (
                step_spec.tools[0].name if step_spec.tools else c.ACTION_FINISH
            )
            step_attrs: dict[str, Any] = {c.STEP_INDEX: index, c.STEP_ACTION: action}
            if step_spec.observation is not None:
                step_attrs[c.STEP_OBSERVATION] = step_spec.observation
            step = t.start_span(c.SPAN_STEP.format(index=index), context=rctx, start_time=tick(), attributes=step_attrs)
            sctx = trace.set_span_in_context(step)
            for chat_spec in step_spec.chats:
                self._chat(sctx, chat_spec, tick)
            for tool_spec in step_spec.tools:
                self._tool(sctx, tool_spec, tick)
            step.end(end_time=tick())
        if not spec.ok:
            root.set_attribute(c.ERROR_TYPE, spec.stop_reason)
            root.set_status(Status(StatusCode.ERROR, spec.stop_reason))
        root.end(end_time=tick())
        return spec

    def _chat(self, ctx: Any, spec: Chat, tick: Any) -> None:
        attrs: dict[str, Any] = {
            c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
            c.GEN_AI_PROVIDER_NAME: "acme",
            c.GEN_AI_REQUEST_MODEL: spec.model,
            c.GEN_AI_USAGE_INPUT_TOKENS: spec.input_tokens,
            c.GEN_AI_USAGE_OUTPUT_TOKENS: spec.output_tokens,
        }
        if spec.cost is not None:
            attrs[c.COST_USD] = spec.cost
        span = self.tracer.start_span(
            c.SPAN_CHAT.format(model=spec.model), context=ctx, kind=SpanKind.CLIENT, start_time=tick(), attributes=attrs
        )
        if spec.error_type:
            span.set_attribute(c.ERROR_TYPE, spec.error_type)
            span.set_status(Status(StatusCode.ERROR, spec.error_message or spec.error_type))
        span.end(end_time=tick())

    def _tool(self, ctx: Any, spec: Tool, tick: Any) -> None:
        attrs: dict[str, Any] = {
            c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
            c.GEN_AI_TOOL_NAME: spec.name,
            c.TOOL_DECISION: spec.decision,
        }
        if spec.arguments is not None:
            attrs[c.GEN_AI_TOOL_CALL_ARGUMENTS] = json.dumps(spec.arguments)
        if spec.result is not None:
            attrs[c.GEN_AI_TOOL_CALL_RESULT] = spec.result
        if spec.cost is not None:
            attrs[c.COST_USD] = spec.cost
        span = self.tracer.start_span(c.SPAN_TOOL.format(tool=spec.name), context=ctx, start_time=tick(), attributes=attrs)
        if spec.error_type:
            span.set_attribute(c.ERROR_TYPE, spec.error_type)
            span.set_status(Status(StatusCode.ERROR, spec.error_message or spec.error_type))
        span.end(end_time=tick())
        if spec.observation_tokens is not None:
            given = spec.observation_tokens + spec.dropped_tokens
            truncate = self.tracer.start_span(
                c.SPAN_TRUNCATE,
                context=ctx,
                start_time=tick(),
                attributes={
                    c.TRUNCATE_LIMIT_TOKENS: spec.observation_tokens,
                    c.TRUNCATE_INPUT_TOKENS: given,
                    c.TRUNCATE_OUTPUT_TOKENS: spec.observation_tokens,
                    c.TRUNCATE_DROPPED_TOKENS: spec.dropped_tokens,
                    c.TRUNCATE_TRUNCATED: spec.dropped_tokens > 0,
                },
            )
            truncate.end(end_time=tick())

    def foreign_failed_run(self, start: datetime, tool: str, exc_type: str, message: str) -> str:
        """An OpenInference-style trace (no steplens attributes): a CHAIN root and a TOOL child, both
        failed with a recorded exception, as such clients report errors. Returns the trace id."""
        root = self.tracer.start_span(
            "AgentExecutor", start_time=ns(start), attributes={c.OI_SPAN_KIND: "CHAIN"}
        )
        ctx = trace.set_span_in_context(root)
        child = self.tracer.start_span(
            tool, context=ctx, start_time=ns(start + SLOT), attributes={c.OI_SPAN_KIND: "TOOL", c.OI_TOOL_NAME: tool}
        )
        event = {c.EXCEPTION_TYPE: exc_type, c.EXCEPTION_MESSAGE: message}
        child.add_event(c.EXCEPTION_EVENT, event, timestamp=ns(start + 2 * SLOT))
        child.set_status(Status(StatusCode.ERROR))
        child.end(end_time=ns(start + 3 * SLOT))
        root.add_event(c.EXCEPTION_EVENT, event, timestamp=ns(start + 4 * SLOT))
        root.set_status(Status(StatusCode.ERROR))
        root.end(end_time=ns(start + 5 * SLOT))
        return format(root.get_span_context().trace_id, "032x")
