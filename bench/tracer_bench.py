"""Cost of steplens tracing, per span and (once the kernel lands) per agent run.

    .venv/bin/python bench/tracer_bench.py [--spans 20000] [--repeat 5]

Part 1 (now): the per-span cost of our helpers against a bare OpenTelemetry SDK span carrying the
same number of attributes, both exported through a BatchSpanProcessor into an exporter that
discards. Target: helper <= 1.5x bare. Also the no-op path (nothing set up) and the helpers with
content capture on (extra work by design: redaction + JSON, reported, not part of the target).

Part 2 (placeholders until kernel/agent.py exists): one scripted agent run
  untraced → no-op tracer → SDK + discarding exporter → OTLP/HTTP to a local receiver,
reported as ms per run and overhead vs untraced. Add each as a function in KERNEL_SCENARIOS.

Figures are medians over `--repeat` rounds; run on a quiet machine for numbers worth quoting.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

import tracer  # noqa: E402
from tracer import conventions as c  # noqa: E402
from tracer import spans  # noqa: E402

TARGET_RATIO = 1.5


class DiscardExporter(SpanExporter):
    """Accepts and forgets: measures the pipeline, not a backend."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


# The attributes a tool span carries without content (same keys and value types as the helper sets).
TOOL_ATTRS = {
    c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
    c.GEN_AI_TOOL_NAME: "get_weather",
    c.GEN_AI_TOOL_TYPE: c.TOOL_TYPE_FUNCTION,
    c.TOOL_SIDE_EFFECT: False,
    c.GEN_AI_TOOL_CALL_ID: "call_1",
    c.TOOL_RISK: "low",
    c.TOOL_TIMEOUT_S: 5.0,
    c.TOOL_DECISION: "executed",
    c.COST_USD: 0.002,
}
N_ATTRS = len(TOOL_ATTRS)


def _queue(n: int) -> int:
    return 2 * n + 4096


def _per_span_us(fn: Callable[[int], None], n: int, repeat: int) -> float:
    fn(min(n, 2000))  # warm-up
    rounds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(n)
        rounds.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(rounds)


def bare_sdk(n: int, repeat: int) -> dict[str, float]:
    provider = TracerProvider()
    # Queues large enough that neither pipeline drops (dropping has its own cost: not measured here).
    provider.add_span_processor(BatchSpanProcessor(DiscardExporter(), max_queue_size=_queue(n)))
    sdk_tracer = provider.get_tracer("bench")

    def start_span(k: int) -> None:
        for _ in range(k):
            sdk_tracer.start_span("execute_tool get_weather", kind=SpanKind.INTERNAL, attributes=TOOL_ATTRS).end()

    def current_span(k: int) -> None:
        for _ in range(k):
            with sdk_tracer.start_as_current_span("execute_tool get_weather", attributes=TOOL_ATTRS):
                pass

    out = {
        "bare SDK start_span+end": _per_span_us(start_span, n, repeat),
        "bare SDK start_as_current_span": _per_span_us(current_span, n, repeat),
    }
    provider.shutdown()
    return out


def _helper_loop(k: int) -> None:
    for _ in range(k):
        with spans.tool_span("get_weather", call_id="call_1", side_effect=False, risk=c.RiskLevel.LOW,
                             timeout_s=5.0) as tool:
            tool.finish(decision=c.ToolDecision.EXECUTED, cost_usd=0.002)


def _helper_loop_content(k: int) -> None:
    for _ in range(k):
        with spans.tool_span("get_weather", call_id="call_1", side_effect=False, risk=c.RiskLevel.LOW,
                             timeout_s=5.0, arguments={"city": "Paris", "units": "metric"}) as tool:
            tool.finish(decision=c.ToolDecision.EXECUTED, cost_usd=0.002,
                        result='{"temp_c": 21, "sky": "clear", "contact": "ops@example.org"}')


def helpers(n: int, repeat: int) -> dict[str, float]:
    out = {"helper, nothing set up (no-op)": _per_span_us(_helper_loop, n, repeat)}
    for label, loop, capture in (
        ("helper tool_span, capture off", _helper_loop, False),
        ("helper tool_span, capture on (+2 content attrs)", _helper_loop_content, True),
    ):
        handle = tracer.setup(service_name="bench", exporter=DiscardExporter(), capture_content=capture,
                              max_queue_size=_queue(n))
        out[label] = _per_span_us(loop, n, repeat)
        handle.shutdown()
        stats = handle.stats()
        if stats.dropped or stats.failed:
            print(f"  warning: {label}: {stats}")
    return out


# --------------------------------------------------------------------------------------------
# Part 2: whole agent runs (filled in when kernel/agent.py lands)
# --------------------------------------------------------------------------------------------


@dataclass
class RunScenario:
    name: str
    run: Callable[[int], float] | None  # runs N scripted agent runs, returns ms per run
    note: str = "pending: needs kernel/agent.py (ScriptedLLM run of ~5 steps)"


KERNEL_SCENARIOS: list[RunScenario] = [
    RunScenario("kernel run, untraced (baseline)", None),
    RunScenario("kernel run, no-op tracer (nothing set up)", None),
    RunScenario("kernel run, SDK + discarding exporter", None),
    RunScenario("kernel run, OTLP/HTTP to a local receiver (127.0.0.1, port 0)", None),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    print(f"Part 1: per-span cost, {N_ATTRS} attributes, {args.spans} spans x {args.repeat} rounds (median)")
    figures = {**bare_sdk(args.spans, args.repeat), **helpers(args.spans, args.repeat)}
    baseline = figures["bare SDK start_as_current_span"]
    width = max(len(k) for k in figures)
    for name, us in figures.items():
        print(f"  {name:<{width}}  {us:8.2f} µs/span  {us / baseline:5.2f}x")
    ratio = figures["helper tool_span, capture off"] / baseline
    verdict = "OK" if ratio <= TARGET_RATIO else "OVER TARGET"
    print(f"  helper / bare (same attributes, both current spans): {ratio:.2f}x "
          f"(target <= {TARGET_RATIO}x) {verdict}")
    print(f"  helper / bare start_span: {figures['helper tool_span, capture off'] / figures['bare SDK start_span+end']:.2f}x")

    print("Part 2: per-run cost")
    baseline_ms: float | None = None
    for scenario in KERNEL_SCENARIOS:
        if scenario.run is None:
            print(f"  {scenario.name}: {scenario.note}")
            continue
        ms = scenario.run(50)
        baseline_ms = baseline_ms or ms
        print(f"  {scenario.name}: {ms:.3f} ms/run  {ms / baseline_ms:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
