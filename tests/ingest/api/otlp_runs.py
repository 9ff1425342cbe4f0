"""Builds real OTLP export requests of kernel-shaped agent runs with the OpenTelemetry SDK.

Spans are produced by an SDK TracerProvider into an InMemorySpanExporter and encoded with the
OTLP exporter's own encoder, so the bytes are exactly what a real client sends; each run's
expected totals are kept next to it so tests compare the API against what was sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from tracer import conventions as c

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ns(ts: datetime) -> int:
    """Exact nanoseconds since the epoch (float timestamps would lose microseconds)."""
    return (ts - _EPOCH) // timedelta(microseconds=1) * 1000


@dataclass
class RunSpec:
    """One agent run to emit; the fields are also the expected values of its RUN row."""

    start: datetime = T0
    agent: str = "support_agent"
    version: str = "1.0"
    name: str | None = None  # default: "invoke_agent {agent}"
    ok: bool = True
    stop_reason: str = c.StopReason.FINISH
    steps: int = 2
    model: str = "gpt-4o-mini"
    input_tokens_per_step: int = 100
    output_tokens_per_step: int = 20
    cost_per_step: float = 0.001
    failing_tools: int = 0  # the first N steps' tool calls fail
    duration: timedelta = timedelta(seconds=3)
    user: str | None = None
    conversation: str | None = None
    trace_id: str = field(default="", init=False)

    @property
    def input_tokens(self) -> int:
        return self.steps * self.input_tokens_per_step

    @property
    def output_tokens(self) -> int:
        return self.steps * self.output_tokens_per_step

    @property
    def cost_usd(self) -> float:
        return self.steps * self.cost_per_step

    @property
    def duration_ms(self) -> float:
        return self.duration / timedelta(milliseconds=1)


class Emitter:
    """An SDK TracerProvider for one service/environment whose spans become OTLP requests."""

    def __init__(self, service: str = "agent-svc", environment: str | None = "prod") -> None:
        attrs = {c.SERVICE_NAME: service}
        if environment:
            attrs[c.DEPLOYMENT_ENVIRONMENT_NAME] = environment
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create(attrs))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("steplens.tests")

    def request(self) -> ExportTraceServiceRequest:
        """Everything emitted since the last call, as one export request."""
        spans = self.exporter.get_finished_spans()
        self.exporter.clear()
        return encode_spans(spans)

    def run(self, spec: RunSpec) -> RunSpec:
        """Emit one kernel-shaped run: invoke_agent > step i > (chat, execute_tool)."""
        t = self.tracer
        root_attrs = {
            c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
            c.GEN_AI_AGENT_NAME: spec.agent,
            c.GEN_AI_AGENT_VERSION: spec.version,
            c.GEN_AI_REQUEST_MODEL: spec.model,
            c.RUN_OK: spec.ok,
            c.RUN_STOP_REASON: str(spec.stop_reason),
            c.RUN_STEPS: spec.steps,
            c.RUN_MODE: c.RunMode.LIVE.value,
            c.USAGE_INPUT_TOKENS: spec.input_tokens,
            c.USAGE_OUTPUT_TOKENS: spec.output_tokens,
            c.USAGE_COST_USD: spec.cost_usd,
        }
        if spec.user:
            root_attrs[c.ENDUSER_ID] = spec.user
        if spec.conversation:
            root_attrs[c.GEN_AI_CONVERSATION_ID] = spec.conversation
        name = spec.name or c.SPAN_RUN.format(agent=spec.agent)
        end = spec.start + spec.duration
        root = t.start_span(name, kind=SpanKind.INTERNAL, attributes=root_attrs, start_time=ns(spec.start))
        spec.trace_id = format(root.get_span_context().trace_id, "032x")
        ctx = trace.set_span_in_context(root)
        slot = (spec.duration - timedelta(milliseconds=10)) / max(spec.steps, 1)
        for i in range(spec.steps):
            s0 = spec.start + timedelta(milliseconds=5) + i * slot
            step = t.start_span(
                c.SPAN_STEP.format(index=i), context=ctx, start_time=ns(s0), attributes={c.STEP_INDEX: i}
            )
            sctx = trace.set_span_in_context(step)
            chat = t.start_span(
                c.SPAN_CHAT.format(model=spec.model),
                context=sctx,
                kind=SpanKind.CLIENT,
                start_time=ns(s0 + slot * 0.1),
                attributes={
                    c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
                    c.GEN_AI_PROVIDER_NAME: "openai",
                    c.GEN_AI_REQUEST_MODEL: spec.model,
                    c.GEN_AI_USAGE_INPUT_TOKENS: spec.input_tokens_per_step,
                    c.GEN_AI_USAGE_OUTPUT_TOKENS: spec.output_tokens_per_step,
                    c.COST_USD: spec.cost_per_step,
                },
            )
            chat.end(end_time=ns(s0 + slot * 0.5))
            tool = t.start_span(
                c.SPAN_TOOL.format(tool="lookup"),
                context=sctx,
                start_time=ns(s0 + slot * 0.6),
                attributes={
                    c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
                    c.GEN_AI_TOOL_NAME: "lookup",
                    c.TOOL_DECISION: c.ToolDecision.EXECUTED.value,
                },
            )
            if i < spec.failing_tools:
                tool.set_attribute(c.ERROR_TYPE, c.ToolErrorCode.TIMEOUT.value)
                tool.set_status(Status(StatusCode.ERROR, "tool timed out"))
            tool.end(end_time=ns(s0 + slot * 0.9))
            step.end(end_time=ns(s0 + slot * 0.95))
        if not spec.ok:
            root.set_status(Status(StatusCode.ERROR, str(spec.stop_reason)))
        root.end(end_time=ns(end))
        return spec

    def wide_trace(self, children: int, start: datetime = T0, agent: str = "wide_agent") -> str:
        """One run with `children` step spans, each with a chat span: 1 + 2*children spans."""
        t = self.tracer
        root = t.start_span(
            c.SPAN_RUN.format(agent=agent),
            start_time=ns(start),
            attributes={
                c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
                c.GEN_AI_AGENT_NAME: agent,
                c.RUN_OK: True,
                c.RUN_STOP_REASON: c.StopReason.FINISH.value,
                c.RUN_STEPS: children,
            },
        )
        ctx = trace.set_span_in_context(root)
        for i in range(children):
            s0 = start + timedelta(milliseconds=i)
            step = t.start_span(c.SPAN_STEP.format(index=i), context=ctx, start_time=ns(s0))
            chat = t.start_span(
                c.SPAN_CHAT.format(model="m"),
                context=trace.set_span_in_context(step),
                kind=SpanKind.CLIENT,
                start_time=ns(s0),
                attributes={c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_REQUEST_MODEL: "m"},
            )
            chat.end(end_time=ns(s0 + timedelta(microseconds=500)))
            step.end(end_time=ns(s0 + timedelta(microseconds=900)))
        root.end(end_time=ns(start + timedelta(milliseconds=children + 1)))
        return format(root.get_span_context().trace_id, "032x")
