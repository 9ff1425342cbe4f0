"""The tracer benchmark's yardstick: the kernel instrumented with BARE OpenTelemetry SDK spans.

`kernel.telemetry` is the only place the kernel calls into tracing, so swapping its functions for
minimal ones gives "the same kernel run, with spans of the same names, kinds, nesting and
attribute counts, made the cheapest way the SDK allows" (`start_as_current_span` with every
attribute passed at start, no content policy, no counting, no metrics). Comparing our per-span
cost with this one, measured inside the same kind of run, charges both with the same GC pressure
and cache misses, which a tight loop of bare spans would not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind, Tracer

from kernel import telemetry
from kernel.truncation import truncate_observation

Attrs = Mapping[str, Any]


class _Bare:
    """`with` + the no-op `finish` the agent calls; the span got all its attributes at start."""

    __slots__ = ("_cm",)
    trace_id = None

    def __init__(self, tracer: Tracer, name: str, kind: SpanKind, attributes: Attrs) -> None:
        self._cm = tracer.start_as_current_span(name, kind=kind, attributes=attributes)

    def __enter__(self) -> _Bare:
        self._cm.__enter__()
        return self

    def __exit__(self, *exc: Any) -> bool:
        self._cm.__exit__(*exc)
        return False

    def finish(self, *_: Any) -> None:
        return None


@contextmanager
def bare_kernel_tracing(provider: TracerProvider, attributes: Mapping[str, Attrs]) -> Iterator[None]:
    """Patch `kernel.telemetry` for the duration. `attributes` maps a span name (as recorded from a
    real traced run: "step 1", "chat gpt-4o-mini", ...) to the attributes that span carried."""
    tracer = provider.get_tracer("bench-bare")
    internal, client = SpanKind.INTERNAL, SpanKind.CLIENT

    def pick(prefix: str) -> tuple[str, Attrs]:
        name = next(n for n in attributes if n.startswith(prefix))
        return name, attributes[name]

    run_name, run_attrs = pick("invoke_agent ")
    _, step_attrs = pick("step ")
    chat_name, chat_attrs = pick("chat ")
    tool_name, tool_attrs = pick("execute_tool ")
    _, check_attrs = pick("budget_check")
    _, trunc_attrs = pick("truncate_observation")

    def run_span(agent: Any, task: Any, conversation_id: Any, user_id: Any) -> _Bare:
        return _Bare(tracer, run_name, internal, run_attrs)

    def step_span(index: int, steps: Any) -> _Bare:
        return _Bare(tracer, f"step {index}", internal, step_attrs)

    def budget_check(check: Any) -> None:
        tracer.start_span("budget_check", kind=internal, attributes=check_attrs).end()

    async def complete(llm: Any, messages: Any, tools: Any, *, temperature: Any, max_tokens: Any) -> Any:
        with tracer.start_as_current_span(chat_name, kind=client, attributes=chat_attrs):
            return await llm.complete(messages, tools, temperature=temperature, max_tokens=max_tokens)

    def tool_span(tool: Any, call: Any) -> _Bare:
        return _Bare(tracer, tool_name, internal, tool_attrs)

    def truncate(text: str, limit_tokens: int) -> Any:
        with tracer.start_as_current_span("truncate_observation", kind=internal, attributes=trunc_attrs):
            return truncate_observation(text, limit_tokens)

    patches = {"run_span": run_span, "step_span": step_span, "budget_check": budget_check,
               "complete": complete, "tool_span": tool_span, "truncate": truncate}
    saved = {name: getattr(telemetry, name) for name in patches}
    for name, fn in patches.items():
        setattr(telemetry, name, fn)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(telemetry, name, fn)
