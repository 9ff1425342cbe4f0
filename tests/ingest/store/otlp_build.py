"""Builds OTLP export requests span by span, for store tests that need exact control of ids,
times and batch boundaries (a child before its root, the same span twice, old timestamps)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from tracer import conventions as c

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def ns(ts: datetime) -> int:
    return (ts - _EPOCH) // timedelta(microseconds=1) * 1000


def new_trace_id() -> str:
    return os.urandom(16).hex()


def new_span_id() -> str:
    return os.urandom(8).hex()


def _value(v: Any) -> AnyValue:
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    return AnyValue(string_value=str(v))


@dataclass
class S:
    """One span to put in a request."""

    trace_id: str
    name: str
    parent: str | None = None
    span_id: str = field(default_factory=new_span_id)
    start: datetime = T0
    duration: timedelta = timedelta(milliseconds=100)
    attrs: dict[str, Any] = field(default_factory=dict)
    error: bool = False
    message: str = ""  # the status message
    exception: tuple[str, str] | None = None  # a recorded `exception` event: (type, message)

    def proto(self) -> Span:
        events = []
        if self.exception is not None:
            events.append(Span.Event(
                name=c.EXCEPTION_EVENT, time_unix_nano=ns(self.start + self.duration),
                attributes=[KeyValue(key=c.EXCEPTION_TYPE, value=_value(self.exception[0])),
                            KeyValue(key=c.EXCEPTION_MESSAGE, value=_value(self.exception[1]))],
            ))  # fmt: skip
        return Span(
            trace_id=bytes.fromhex(self.trace_id),
            span_id=bytes.fromhex(self.span_id),
            parent_span_id=bytes.fromhex(self.parent) if self.parent else b"",
            name=self.name,
            kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=ns(self.start),
            end_time_unix_nano=ns(self.start + self.duration),
            attributes=[KeyValue(key=k, value=_value(v)) for k, v in self.attrs.items()],
            status=Status(
                code=Status.STATUS_CODE_ERROR if self.error else Status.STATUS_CODE_UNSET, message=self.message
            ),
            events=events,
        )


def request(
    spans: list[S], service: str = "test-svc", resource: dict[str, Any] | None = None
) -> ExportTraceServiceRequest:
    attrs = {c.SERVICE_NAME: service, **(resource or {})}
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=[KeyValue(key=k, value=_value(v)) for k, v in attrs.items()]),
                scope_spans=[ScopeSpans(scope=InstrumentationScope(name="tests"), spans=[s.proto() for s in spans])],
            )
        ]
    )


def agent_run(
    trace_id: str | None = None,
    start: datetime = T0,
    agent: str = "support_agent",
    steps: int = 2,
    tool_error_steps: int = 0,
    model: str = "gpt-4o-mini",
    ok: bool = True,
) -> tuple[S, list[S]]:
    """A kernel-shaped run: (root invoke_agent span, [step, chat, execute_tool per step])."""
    tid = trace_id or new_trace_id()
    root = S(
        tid,
        f"invoke_agent {agent}",
        start=start,
        duration=timedelta(seconds=steps + 1),
        attrs={
            c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
            c.GEN_AI_AGENT_NAME: agent,
            c.GEN_AI_AGENT_VERSION: "1.0",
            c.RUN_OK: ok,
            c.RUN_STOP_REASON: c.StopReason.FINISH.value if ok else c.StopReason.MAX_STEPS.value,
            c.RUN_STEPS: steps,
            c.RUN_MODE: c.RunMode.LIVE.value,
            c.EVAL_RUN_ID: "eval-7",
        },
        error=not ok,
    )
    children: list[S] = []
    for i in range(steps):
        t = start + timedelta(seconds=i + 0.1)
        step = S(tid, f"step {i}", parent=root.span_id, start=t, duration=timedelta(seconds=0.8),
                 attrs={c.STEP_INDEX: i})
        chat = S(
            tid, f"chat {model}", parent=step.span_id, start=t + timedelta(milliseconds=10),
            duration=timedelta(milliseconds=300),
            attrs={
                c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_REQUEST_MODEL: model,
                c.GEN_AI_PROVIDER_NAME: "openai", c.GEN_AI_USAGE_INPUT_TOKENS: 100,
                c.GEN_AI_USAGE_OUTPUT_TOKENS: 20, c.COST_USD: 0.001,
            },
        )
        failed = i < tool_error_steps
        tool_attrs: dict[str, Any] = {
            c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_NAME: "search",
        }
        if failed:
            tool_attrs[c.ERROR_TYPE] = c.ToolErrorCode.TIMEOUT.value
        tool = S(tid, "execute_tool search", parent=step.span_id, start=t + timedelta(milliseconds=400),
                 duration=timedelta(milliseconds=200), attrs=tool_attrs, error=failed)
        children += [step, chat, tool]
    return root, children
