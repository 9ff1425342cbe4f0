"""Realistic agent-run OTLP payloads for the ingest benchmark (~700 bytes per span on the wire).

Why templates with a swapped trace-id prefix: the load generator shares the 2 cores with the server
it measures, so it must not spend them building protobuf. A few request bodies are built once (real
`ExportTraceServiceRequest`s: invoke_agent / step / chat / execute_tool / truncate spans with the
GenAI and steplens attributes, messages, tool arguments and results); every trace id of a template
starts with the same random 8 bytes, and each send replaces those 8 bytes with fresh ones
(`bytes.replace`, microseconds), so every request carries new traces that the store cannot dedup.
Timestamps are moved to the send time the same way (their fixed64 bytes are patched in place): a
live agent's spans are recent, and the store's time-bounded dedup probe relies on that.
"""

from __future__ import annotations

import json
import os
import random
import struct
import time
from collections import Counter
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from tracer import conventions as c

_MODELS = ("gpt-4.1-mini", "gpt-4.1", "gpt-5-mini")
_TOOLS = ("search_orders", "lookup_customer", "refund_payment", "fetch_invoice", "send_email")
_WORDS = (
    "order", "customer", "refund", "invoice", "shipping", "delayed", "account", "status", "payment", "card",
    "total", "item", "warehouse", "policy", "address", "ticket", "priority", "review", "approved", "pending",
    "returned", "tracking", "carrier", "balance",
)
_INTERNAL, _CLIENT = Span.SPAN_KIND_INTERNAL, Span.SPAN_KIND_CLIENT
_U64 = struct.Struct("<Q")


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _value(v: object) -> AnyValue:
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    if isinstance(v, list | tuple):
        return AnyValue(array_value=ArrayValue(values=[_value(x) for x in v]))
    return AnyValue(string_value=str(v))


def _kvs(attrs: dict[str, object]) -> list[KeyValue]:
    return [KeyValue(key=k, value=_value(v)) for k, v in attrs.items()]


class _Ids:
    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def span(self) -> bytes:
        return self._rng.getrandbits(64).to_bytes(8, "big")


def _span(
    trace_id: bytes, span_id: bytes, parent: bytes, name: str, kind: int, start: int, end: int,
    attrs: dict[str, object], error: str | None = None,
) -> Span:
    status = Status(code=Status.STATUS_CODE_ERROR, message=error) if error else Status()
    return Span(
        trace_id=trace_id, span_id=span_id, parent_span_id=parent, name=name, kind=kind,
        start_time_unix_nano=start, end_time_unix_nano=end, attributes=_kvs(attrs), status=status,
    )


def agent_run(rng: random.Random, trace_id: bytes, t0_ns: int) -> list[Span]:
    """One ReAct run as the kernel emits it (design.md §2): run, steps, chat, tool, truncate spans."""
    ids = _Ids(rng)
    steps = rng.randint(2, 4)
    model = rng.choice(_MODELS)
    root = ids.span()
    spans: list[Span] = []
    t = t0_ns
    in_total = out_total = 0
    for i in range(steps):
        step_id = ids.span()
        step_start = t
        finish = i == steps - 1
        tool = c.ACTION_FINISH if finish else rng.choice(_TOOLS)
        n_in, n_out = rng.randint(400, 2400), rng.randint(20, 200)
        in_total, out_total = in_total + n_in, out_total + n_out
        chat_end = t + rng.randint(300, 2000) * 1_000_000
        messages_in = [
            {"role": "system", "parts": [{"type": "text", "content": _text(rng, 12)}]},
            {"role": "user", "parts": [{"type": "text", "content": _text(rng, 40)}]},
        ]
        call = {"name": tool, "arguments": {"order_id": rng.randint(1000, 99999)}}
        messages_out = [{"role": "assistant", "parts": [{"type": "tool_call", **call}], "finish_reason": "stop"}]
        spans.append(_span(trace_id, ids.span(), step_id, f"chat {model}", _CLIENT, t + 1000, chat_end, {
            c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
            c.GEN_AI_PROVIDER_NAME: "openai",
            c.GEN_AI_REQUEST_MODEL: model,
            c.GEN_AI_RESPONSE_MODEL: model,
            c.GEN_AI_USAGE_INPUT_TOKENS: n_in,
            c.GEN_AI_USAGE_OUTPUT_TOKENS: n_out,
            c.GEN_AI_RESPONSE_FINISH_REASONS: ["stop"],
            c.GEN_AI_REQUEST_TEMPERATURE: 0.2,
            c.GEN_AI_REQUEST_MAX_TOKENS: 1024,
            c.LLM_ATTEMPT: 1,
            c.GEN_AI_INPUT_MESSAGES: json.dumps(messages_in),
            c.GEN_AI_OUTPUT_MESSAGES: json.dumps(messages_out),
        }))
        t = chat_end
        observation = _text(rng, 20)
        if not finish:
            failed = rng.random() < 0.1
            tool_end = t + rng.randint(5, 400) * 1_000_000
            result = {"status": "ok", "rows": [_text(rng, 8) for _ in range(3)]}
            spans.append(_span(trace_id, ids.span(), step_id, f"execute_tool {tool}", _INTERNAL, t, tool_end, {
                c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
                c.GEN_AI_TOOL_NAME: tool,
                c.GEN_AI_TOOL_CALL_ID: f"call_{rng.getrandbits(48):012x}",
                c.GEN_AI_TOOL_TYPE: c.TOOL_TYPE_FUNCTION,
                c.TOOL_DECISION: c.ToolDecision.EXECUTED.value,
                c.TOOL_RISK: c.RiskLevel.LOW.value,
                c.TOOL_TIMEOUT_S: 30.0,
                c.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(call["arguments"]),
                c.GEN_AI_TOOL_CALL_RESULT: "" if failed else json.dumps(result),
                **({c.ERROR_TYPE: c.ToolErrorCode.TIMEOUT.value} if failed else {}),
            }, error="tool timed out after 30 s" if failed else None))
            t = tool_end
            spans.append(_span(trace_id, ids.span(), step_id, c.SPAN_TRUNCATE, _INTERNAL, t, t + 50_000, {
                c.TRUNCATE_LIMIT_TOKENS: 2000,
                c.TRUNCATE_INPUT_TOKENS: 120,
                c.TRUNCATE_OUTPUT_TOKENS: 120,
                c.TRUNCATE_DROPPED_TOKENS: 0,
                c.TRUNCATE_TRUNCATED: False,
            }))
            t += 60_000
        kind = c.StepKind.FINISH if finish else c.StepKind.TOOL
        spans.append(_span(trace_id, step_id, root, f"step {i}", _INTERNAL, step_start, t, {
            c.STEP_INDEX: i,
            c.STEP_KIND: kind.value,
            c.STEP_ACTION: tool,
            c.STEP_PARSE: c.ParseStatus.OK.value,
            c.STEP_THOUGHT: _text(rng, 20),
            c.STEP_OBSERVATION: observation,
        }))
    ok = rng.random() < 0.9
    stop = c.StopReason.FINISH if ok else c.StopReason.MAX_STEPS
    spans.append(_span(trace_id, root, b"", "invoke_agent support", _INTERNAL, t0_ns, t, {
        c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
        c.GEN_AI_AGENT_NAME: "support",
        c.GEN_AI_AGENT_VERSION: "1.4.0",
        c.GEN_AI_AGENT_ID: "agent-support",
        c.GEN_AI_REQUEST_MODEL: model,
        c.RUN_OK: ok,
        c.RUN_STOP_REASON: stop.value,
        c.RUN_STEPS: steps,
        c.RUN_MODE: c.RunMode.LIVE.value,
        c.BUDGET_MAX_STEPS: 8,
        c.USAGE_INPUT_TOKENS: in_total,
        c.USAGE_OUTPUT_TOKENS: out_total,
        c.RUN_TASK: _text(rng, 12),
        c.RUN_ANSWER: _text(rng, 10) if ok else "",
        c.ENDUSER_ID: f"user-{rng.randint(1, 500)}",
    }, error=None if ok else f"stopped: {stop.value}"))
    return spans


@dataclass(frozen=True)
class Template:
    body: bytes  # serialized ExportTraceServiceRequest
    prefix: bytes  # the 8 leading bytes every trace id of `body` shares
    spans: int
    suffixes: tuple[bytes, ...]  # the 8 trailing bytes of each trace id
    root_span_count: tuple[int, ...]  # spans per trace, same order as suffixes
    built_ns: int  # the wall clock the template's timestamps are relative to
    time_fields: tuple[tuple[int, int], ...]  # (byte offset, value) of every fixed64 start/end time


def _time_fields(body: bytes, spans: list[Span]) -> tuple[tuple[int, int], ...] | None:
    """Where each span's start/end time sits in `body` (fixed64 after tags 0x39 / 0x41), so a send can
    move every timestamp to "now" by patching bytes; None if a value is not found exactly once."""
    expected: Counter[tuple[bytes, int]] = Counter()
    for span in spans:
        expected[(b"\x39", span.start_time_unix_nano)] += 1
        expected[(b"\x41", span.end_time_unix_nano)] += 1
    out = []
    for (tag, value), count in expected.items():
        needle = tag + _U64.pack(value)
        found = []
        at = body.find(needle)
        while at >= 0:
            found.append(at + 1)
            at = body.find(needle, at + 1)
        if len(found) != count:
            return None
        out.extend((offset, value) for offset in found)
    return tuple(out)


def build_template(seed: int, spans_per_request: int) -> Template:
    """One request body of at least `spans_per_request` spans (whole runs), trace ids sharing a prefix."""
    rng = random.Random(seed)
    while True:
        prefix = rng.getrandbits(64).to_bytes(8, "big")
        spans: list[Span] = []
        suffixes, counts = [], []
        t0 = time.time_ns() - 60 * 1_000_000_000
        while len(spans) < spans_per_request:
            suffix = rng.getrandbits(64).to_bytes(8, "big")
            run = agent_run(rng, prefix + suffix, t0 + rng.randint(0, 30_000) * 1_000_000)
            spans.extend(run)
            suffixes.append(suffix)
            counts.append(len(run))
        body = encode_spans(spans)
        times = _time_fields(body, spans)
        if body.count(prefix) == len(spans) and times is not None:  # the prefix is only in trace ids
            return Template(body, prefix, len(spans), tuple(suffixes), tuple(counts), t0 + 60 * 1_000_000_000, times)


def encode_spans(spans: list[Span], service: str = "support-bot") -> bytes:
    resource = Resource(attributes=_kvs({
        c.SERVICE_NAME: service, c.SERVICE_VERSION: "2025.06.1", c.DEPLOYMENT_ENVIRONMENT_NAME: "prod",
        "telemetry.sdk.name": "opentelemetry", "telemetry.sdk.language": "python",
    }))
    scope = InstrumentationScope(name="steplens.kernel", version="0.1.0")
    request = ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[ScopeSpans(scope=scope, spans=spans)])]
    )
    return request.SerializeToString()


class PayloadFactory:
    """Fresh request bodies from a few templates: `next()` → (body, spans, trace ids as hex)."""

    def __init__(self, spans_per_request: int, templates: int = 4, seed: int = 7) -> None:
        self.templates = [build_template(seed + i, spans_per_request) for i in range(templates)]
        self._i = 0

    @property
    def bytes_per_span(self) -> float:
        return sum(len(t.body) for t in self.templates) / sum(t.spans for t in self.templates)

    def next(self) -> tuple[bytes, int, bytes]:
        """A body with never-seen trace ids; also returns the new 8-byte prefix (to name its traces)."""
        t = self.templates[self._i % len(self.templates)]
        self._i += 1
        prefix = os.urandom(8)
        body = bytearray(t.body.replace(t.prefix, prefix))
        shift = time.time_ns() - t.built_ns  # spans ended up to a minute ago, as from a live agent
        pack = _U64.pack_into
        for offset, value in t.time_fields:
            pack(body, offset, value + shift)
        return bytes(body), t.spans, prefix

    def trace_of(self, prefix: bytes, index: int = 0) -> tuple[str, int]:
        """Hex id and span count of the `index`-th trace of the last template used with `prefix`."""
        t = self.templates[(self._i - 1) % len(self.templates)]
        return (prefix + t.suffixes[index]).hex(), t.root_span_count[index]
