"""Cost of steplens tracing, per span and per agent run.

    .venv/bin/python -m bench.tracer_bench [--part 1|2|all] [--spans 20000] [--repeat 5]
                                           [--rounds 15] [--runs 20]

Part 1: the per-span cost of one helper (`tool_span`) against a bare OpenTelemetry SDK span
carrying the same attributes, both exported through a BatchSpanProcessor into an exporter that
discards. Target: helper <= 1.5x bare. Also the no-op path (nothing set up) and the helper with
content capture on (extra work by design: redaction + JSON, reported, not part of the target).

Part 2: a scripted 10-step kernel run (zero-latency LLM and tool), see `bench/tracer_bench.py`'s
KERNEL_SCENARIOS: (a) untraced, (b) no-op tracer, (c) SDK + discarding exporter, (d) OTLP/HTTP to a
receiver process on 127.0.0.1. Per-span cost = (run time - untraced run time) / spans per run,
compared with a bare SDK replay of exactly the same spans (names, kinds, nesting, attributes)
timed in the same rounds. Targets: ours <= 1.5x bare per span; (b) within 5% of (a).

Rounds are interleaved (a b c d bare a b c d bare ...) and every figure is the median of the
per-round figures, so a burst of load from elsewhere hits all scenarios alike.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

import tracer  # noqa: E402
from bench._bare_kernel_tracing import bare_kernel_tracing  # noqa: E402
from kernel import telemetry  # noqa: E402
from kernel.agent import Agent  # noqa: E402
from kernel.budgets import Budget  # noqa: E402
from kernel.llm import ScriptedLLM  # noqa: E402
from kernel.tools import tool  # noqa: E402
from kernel.types import LLMResponse, Message, Usage  # noqa: E402
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



def span_part(n_spans: int, repeat: int) -> int:
    """Helper vs bare SDK span with the same attributes; returns 1 if the target is missed."""
    print(f"Part 1: per-span cost, {N_ATTRS} attributes, {n_spans} spans x {repeat} rounds (median)")
    figures = {**bare_sdk(n_spans, repeat), **helpers(n_spans, repeat)}
    baseline = figures["bare SDK start_as_current_span"]
    width = max(len(k) for k in figures)
    for name, us in figures.items():
        print(f"  {name:<{width}}  {us:8.2f} µs/span  {us / baseline:5.2f}x")
    ratio = figures["helper tool_span, capture off"] / baseline
    verdict = "OK" if ratio <= TARGET_RATIO else "MISSED"
    print(f"  helper / bare (same attributes, both current spans): {ratio:.2f}x "
          f"(target <= {TARGET_RATIO}x: {verdict})")
    bare_start = figures["bare SDK start_span+end"]
    print(f"  helper / bare start_span: {figures['helper tool_span, capture off'] / bare_start:.2f}x")
    return 0 if ratio <= TARGET_RATIO else 1


# --------------------------------------------------------------------------------------------
# Part 2: a scripted 10-step kernel run
# --------------------------------------------------------------------------------------------

STEPS = 10


def _policy(messages: list[Message], tools: list[dict] | None) -> LLMResponse:
    """Zero-latency model: nine tool calls, then the answer (decided by how far the chat is)."""
    done = sum(1 for m in messages if m.role == "assistant")
    text = (f"Thought: step {done}.\nAction: add\nAction Input: {{\"a\": {done}, \"b\": 1}}"
            if done < STEPS - 1 else "Thought: done.\nFinal Answer: 9")
    return LLMResponse(text=text, model="gpt-4o-mini", usage=Usage(input_tokens=400 + 40 * done, output_tokens=20))


@tool
async def add(a: int, b: int) -> int:
    """Add two integers (returns at once)."""
    return a + b


def _agent() -> Agent:
    return Agent("bench", "1.0", ScriptedLLM(policy=_policy), [add], budget=Budget(max_steps=STEPS))


async def _runs(agent: Agent, n: int, flush: Callable[[], object] | None = None) -> float:
    """n runs back to back, then `flush` (the export of their spans, so its cost is charged to
    them rather than spilling into the next measurement); µs per run."""
    t0 = time.perf_counter()
    for _ in range(n):
        result = await agent.run("count to nine")
        if not result.ok:
            raise RuntimeError(f"bench run failed: {result.stop_reason} {result.error}")
    if flush is not None:
        flush()
    return (time.perf_counter() - t0) / n * 1e6


async def _alternating(n: int) -> tuple[float, float, float]:
    """n runs each of: untraced, untraced again (the noise floor: identical code), and no-op
    traced, rotated run by run so a burst of load hits all three alike; µs per run of each."""
    kinds = ("a", "a2", "b")
    spent = dict.fromkeys(kinds, 0.0)
    for i in range(n):
        for kind in kinds[i % 3:] + kinds[: i % 3]:
            agent = _agent()
            t0 = time.perf_counter()
            if kind == "b":
                await agent.run("count to nine")
            else:
                with telemetry.tracing_disabled():
                    await agent.run("count to nine")
            spent[kind] += time.perf_counter() - t0
    return spent["a"] / n * 1e6, spent["a2"] / n * 1e6, spent["b"] / n * 1e6


def noop_bridge_us(n: int = 20_000) -> float:
    """µs per span of the bridge with nothing set up (the path of scenario b), in a tight loop: a
    figure load cannot blur the way it blurs a 5% difference between two whole runs."""
    from kernel.types import ToolCall

    call, steps = ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2}), []

    def spans_of_a_step() -> None:  # step, budget_check, tool, truncate (chat is timed by the run)
        with telemetry.step_span(1, steps), telemetry.tool_span(add, call):
            pass
        telemetry.budget_check(check)
        telemetry.truncate("3", 2000)

    from kernel.budgets import BudgetTracker

    check = BudgetTracker(Budget()).check()
    spans_of_a_step()
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            spans_of_a_step()
        rounds.append((time.perf_counter() - t0) / n / 4 * 1e6)
    return min(rounds)


@dataclass
class SpanShape:
    """One recorded span, to replay with the bare SDK: same name, kind, attributes and children."""

    name: str
    kind: SpanKind
    attributes: dict
    children: list[SpanShape]


@dataclass
class Recorded:
    """What one traced run exported: the span tree, and each span name's attributes."""

    shapes: list[SpanShape]
    attributes: dict[str, dict]
    spans: int


def record_run(capture: bool) -> Recorded:
    """Run once into the in-memory exporter and keep what was exported."""
    handle = tracer.setup(service_name="bench", endpoint="memory", capture_content=capture)
    try:
        asyncio.run(_agent().run("count to nine"))
        finished = handle.memory_exporter.get_finished_spans()
    finally:
        handle.shutdown()
    nodes = {s.context.span_id: SpanShape(s.name, s.kind, dict(s.attributes), []) for s in finished}
    roots: list[SpanShape] = []
    attributes: dict[str, dict] = {}
    for s in sorted(finished, key=lambda s: s.start_time):
        parent = nodes.get(s.parent.span_id) if s.parent is not None else None
        (parent.children if parent is not None else roots).append(nodes[s.context.span_id])
        attributes.setdefault(s.name, dict(s.attributes))
    return Recorded(roots, attributes, len(finished))


class BareReplay:
    """The same span tree through a bare SDK pipeline (BatchSpanProcessor + discarding exporter)."""

    def __init__(self, shapes: list[SpanShape], queue: int) -> None:
        self.shapes = shapes
        self.provider = TracerProvider()
        self.provider.add_span_processor(BatchSpanProcessor(DiscardExporter(), max_queue_size=queue))
        self.tracer = self.provider.get_tracer("bench")

    def _emit(self, shapes: list[SpanShape]) -> None:
        for shape in shapes:
            with self.tracer.start_as_current_span(shape.name, kind=shape.kind, attributes=shape.attributes):
                self._emit(shape.children)

    def run(self, n: int) -> float:
        """n replays of one run's spans; µs per replay."""
        t0 = time.perf_counter()
        for _ in range(n):
            self._emit(self.shapes)
        return (time.perf_counter() - t0) / n * 1e6

    def close(self) -> None:
        self.provider.shutdown()


@contextmanager
def otlp_receiver() -> Iterator[str]:
    """The discarding receiver in its own process; yields its OTLP/HTTP traces URL."""
    proc = subprocess.Popen([sys.executable, "-m", "bench._otlp_receiver"], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1/traces"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@dataclass
class RunScenario:
    key: str
    name: str
    measure: Callable[[int], float]  # n runs → µs per run
    yardstick: str | None = None  # key of the bare scenario its per-span cost is compared with


def _traced(n: int, queue: int, **setup: object) -> float:
    """n runs with a fresh pipeline, its final export included in the time."""
    handle = tracer.setup(service_name="bench", max_queue_size=queue, **setup)
    try:
        us = asyncio.run(_runs(_agent(), n, flush=lambda: handle.provider.force_flush(30_000)))
        stats = handle.stats()
        if stats.dropped or stats.failed or stats.pending:
            print(f"  warning: spans not exported during the bench: {stats}")
    finally:
        handle.shutdown(timeout_s=10)
    return us


def _bare_in_kernel(n: int, queue: int, recorded: Recorded, endpoint: str | None = None) -> float:
    """The yardstick run: bare SDK spans, into a discarding exporter or the SDK's own OTLP/HTTP one."""
    exporter: SpanExporter = DiscardExporter()
    if endpoint is not None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=endpoint)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=queue))
    try:
        with bare_kernel_tracing(provider, recorded.attributes):
            return asyncio.run(_runs(_agent(), n, flush=lambda: provider.force_flush(30_000)))
    finally:
        provider.shutdown()


def _untraced(n: int) -> float:
    with telemetry.tracing_disabled():
        return asyncio.run(_runs(_agent(), n))


def kernel_scenarios(queue: int, endpoint: str, off: Recorded, on: Recorded) -> list[RunScenario]:
    """Each is measured right after an untraced block of the same size (its pair)."""
    return [
        RunScenario("c", "(c) traced, SDK + discarding exporter, capture off",
                    lambda n: _traced(n, queue, exporter=DiscardExporter(), capture_content=False), "bare"),
        RunScenario("d", "(d) traced, OTLP/HTTP to a receiver process, capture off",
                    lambda n: _traced(n, queue, endpoint=endpoint, capture_content=False), "bare-otlp"),
        RunScenario("c+", "(c+) as (c) with content capture on (the default)",
                    lambda n: _traced(n, queue, exporter=DiscardExporter(), capture_content=True), "bare+"),
        RunScenario("bare", "yardstick: same run, bare SDK spans, same attributes",
                    lambda n: _bare_in_kernel(n, queue, off)),
        RunScenario("bare+", "yardstick: same, with the content attributes of (c+)",
                    lambda n: _bare_in_kernel(n, queue, on)),
        RunScenario("bare-otlp", "yardstick: bare SDK spans, the SDK's OTLP/HTTP exporter",
                    lambda n: _bare_in_kernel(n, queue, off, endpoint)),
    ]


def _fmt_ratio(value: float, target: float, label: str) -> tuple[str, bool]:
    ok = value <= target
    return f"  {label} target <= {target}x: {'OK' if ok else 'MISSED'}", ok


def kernel_part(rounds: int, runs: int) -> int:
    """Interleaved rounds of every scenario; returns 1 if a target is missed."""
    off, on = record_run(capture=False), record_run(capture=True)
    spans = off.spans
    queue = _queue(runs * spans)
    load = os.getloadavg()
    print(f"Part 2: {STEPS}-step kernel run, {spans} spans/run, {rounds} interleaved rounds of {runs} runs per "
          f"scenario, each paired with {runs} untraced runs right before it (figures: medians over rounds); "
          f"load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    pairs: dict[str, list[tuple[float, float]]] = {}  # key -> [(untraced µs/run, scenario µs/run)]
    loop_us: list[float] = []
    with otlp_receiver() as endpoint:
        scenarios = kernel_scenarios(queue, endpoint, off, on)
        loop = BareReplay(off.shapes, queue)
        for s in scenarios:  # warm-up: imports, caches, the first connection
            s.measure(2)
        _untraced(2)
        loop.run(2)
        try:
            for _ in range(rounds):
                gc.collect()
                a, a2, b = asyncio.run(_alternating(runs))
                pairs.setdefault("b", []).append((a, b))
                pairs.setdefault("a2", []).append((a, a2))
                for s in scenarios:
                    gc.collect()
                    base = _untraced(runs)
                    gc.collect()
                    pairs.setdefault(s.key, []).append((base, s.measure(runs)))
                gc.collect()
                loop_us.append(loop.run(runs))
        finally:
            loop.close()
    load = os.getloadavg()

    def per_span(key: str) -> float:
        return statistics.median((x - a) / spans for a, x in pairs[key])

    def vs_untraced(key: str) -> float:
        return statistics.median(x / a for a, x in pairs[key])

    missed = False
    print(f"  {'scenario':<58} {'µs/run':>8} {'vs (a)':>7} {'µs/span':>8} {'vs bare':>8}")
    print(f"  {'(a) untraced (telemetry.tracing_disabled)':<58} "
          f"{statistics.median(a for a, _ in pairs['b']):8.0f} {1:6.3f}x")
    print(f"  {'(a2) untraced again: the noise floor of this machine now':<58} "
          f"{statistics.median(x for _, x in pairs['a2']):8.0f} {vs_untraced('a2'):6.3f}x")
    ratio_b = vs_untraced("b")
    text, ok = _fmt_ratio(ratio_b, 1.05, "")
    missed |= not ok
    print(f"  {'(b) traced, no-op provider (nothing set up)':<58} "
          f"{statistics.median(b for _, b in pairs['b']):8.0f} {ratio_b:6.3f}x {'':>17}{text}")
    for s in scenarios:
        line = (f"  {s.name:<58} {statistics.median(x for _, x in pairs[s.key]):8.0f} "
                f"{vs_untraced(s.key):6.3f}x {per_span(s.key):8.2f}")
        if s.yardstick is not None:
            ratio = per_span(s.key) / per_span(s.yardstick)
            line += f" {ratio:7.2f}x"
            if s.key in ("c", "d"):
                text, ok = _fmt_ratio(ratio, TARGET_RATIO, "")
                missed |= not ok
                line += text
        print(line)
    print(f"  {'bare SDK spans of one run replayed in a tight loop':<58} {'':>8} {'':>7} "
          f"{statistics.median(loop_us) / spans:8.2f}")
    noop = noop_bridge_us()
    base = statistics.median(a for a, _ in pairs["b"])
    print(f"  no-op bridge in a tight loop: {noop:.2f} µs/span x {spans} spans = {noop * spans:.0f} µs/run "
          f"= {noop * spans / base:.2%} of the untraced run")
    print(f"  load average at end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 1 if missed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("1", "2", "all"), default="all")
    parser.add_argument("--spans", type=int, default=20_000, help="part 1: spans per round")
    parser.add_argument("--repeat", type=int, default=5, help="part 1: rounds")
    parser.add_argument("--rounds", type=int, default=12, help="part 2: interleaved rounds")
    parser.add_argument("--runs", type=int, default=20, help="part 2: runs per scenario per round")
    args = parser.parse_args(argv)
    logging.getLogger("kernel").setLevel(logging.ERROR)  # unpriced-model warnings are not results

    code = 0
    if args.part in ("1", "all"):
        code |= span_part(args.spans, args.repeat)
    if args.part in ("2", "all"):
        code |= kernel_part(args.rounds, args.runs)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
