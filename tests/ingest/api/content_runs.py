"""Runs with content (task, answer, tool arguments and results, thoughts, exceptions) made by the real
OpenTelemetry SDK, for the filter and search tests; and waiting until the search index has them."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from tests.ingest.api.otlp_runs import T0, Emitter, ns
from tracer import conventions as c


@dataclass
class ToolCall:
    tool: str
    arguments: dict[str, Any]
    result: str = "ok"
    error: str | None = None  # status message of a failed call; also recorded as an exception event
    extra: dict[str, Any] = field(default_factory=dict)  # more span attributes (e.g. a number)


@dataclass
class ContentRun:
    agent: str
    task: str
    answer: str = "done"
    thought: str = "thinking"
    calls: list[ToolCall] = field(default_factory=list)
    start: datetime = T0
    ok: bool = True
    trace_id: str = ""
    span_ids: dict[str, str] = field(default_factory=dict)  # tool name (first call) -> span id


def emit(emitter: Emitter, run: ContentRun) -> ContentRun:
    """One kernel-shaped run: invoke_agent > step i > execute_tool, with content attributes."""
    t = emitter.tracer
    root = t.start_span(
        c.SPAN_RUN.format(agent=run.agent), start_time=ns(run.start),
        attributes={c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: run.agent,
                    c.RUN_TASK: run.task, c.RUN_ANSWER: run.answer, c.RUN_OK: run.ok,
                    c.RUN_STOP_REASON: c.StopReason.FINISH if run.ok else c.StopReason.TOOL_ERROR_EXHAUSTED,
                    c.RUN_STEPS: len(run.calls)},
    )  # fmt: skip
    run.trace_id = format(root.get_span_context().trace_id, "032x")
    ctx = trace.set_span_in_context(root)
    for i, call in enumerate(run.calls):
        s0 = run.start + timedelta(milliseconds=10 + 100 * i)
        step = t.start_span(c.SPAN_STEP.format(index=i), context=ctx, start_time=ns(s0),
                            attributes={c.STEP_INDEX: i, c.STEP_THOUGHT: run.thought})
        tool = t.start_span(
            c.SPAN_TOOL.format(tool=call.tool), context=trace.set_span_in_context(step), kind=SpanKind.INTERNAL,
            start_time=ns(s0 + timedelta(milliseconds=5)),
            attributes={c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_NAME: call.tool,
                        c.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(call.arguments), c.GEN_AI_TOOL_CALL_RESULT: call.result,
                        **call.extra},
        )  # fmt: skip
        run.span_ids.setdefault(call.tool, format(tool.get_span_context().span_id, "016x"))
        if call.error:
            tool.add_event(c.EXCEPTION_EVENT, {c.EXCEPTION_TYPE: "ToolError", c.EXCEPTION_MESSAGE: call.error},
                           timestamp=ns(s0 + timedelta(milliseconds=50)))
            tool.set_attribute(c.ERROR_TYPE, c.ToolErrorCode.EXCEPTION.value)
            tool.set_status(Status(StatusCode.ERROR, call.error))
        tool.end(end_time=ns(s0 + timedelta(milliseconds=60)))
        step.end(end_time=ns(s0 + timedelta(milliseconds=90)))
    root.end(end_time=ns(run.start + timedelta(milliseconds=20 + 100 * len(run.calls))))
    return run


def wait_indexed(server: Any, key: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
    """Poll /api/search/status until nothing of the caller's projects waits for the search index."""
    deadline = time.monotonic() + timeout
    while True:
        status = server.get("/api/search/status", key).json()
        if status["pending_spans"] == 0 and not status["rebuilding"]:
            return status
        assert time.monotonic() < deadline, f"search index still behind after {timeout} s: {status}"
        time.sleep(0.05)
