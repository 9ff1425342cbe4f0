"""Synthetic agent runs sent as real OTLP/HTTP protobuf through a running steplens server.

Each run is an `invoke_agent` root (agent, version, ok, stop reason, steps) with one `chat` span
carrying the run's tokens and cost and one `execute_tool` span per failed tool call, made by the
OpenTelemetry SDK and encoded by the OTLP exporter's own encoder: the bytes a real client sends.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import numpy as np
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from tracer import conventions as c

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FAILURE_REASONS = (c.StopReason.MAX_STEPS.value, c.StopReason.TIMEOUT.value, c.StopReason.TOOL_ERROR_EXHAUSTED.value)


def ns(ts: datetime) -> int:
    return (ts - _EPOCH) // timedelta(microseconds=1) * 1000


def now_utc() -> datetime:
    return datetime.now(UTC)


@dataclass
class Run:
    start: datetime
    agent: str
    version: str
    steps: int
    ok: bool = True
    stop_reason: str = c.StopReason.FINISH.value
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    tool_errors: int = 0
    duration_ms: float = 1000.0
    handoff_reason: str | None = None  # steplens.run.handoff.reason on the run span when set
    release: tuple[str, str] | None = None  # (release name, cohort) a gray release routed the run to


def population(
    rng: np.random.Generator, n: int, agent: str, version: str, starts: list[datetime],
    step_scale: float = 1.0, failure_rate: float = 0.12,
) -> list[Run]:
    """A stable population: steps 1+Poisson(5) (times `step_scale`, stochastically rounded), tokens per step ~ N(400, 80),
    lognormal latency per step, ~`failure_rate` failures spread over three stop reasons."""
    runs = []
    for i in range(n):
        # stochastic rounding keeps the mean exactly scaled (plain rounding would erase a +3% scale)
        steps = max(1, int(np.floor((1 + rng.poisson(5)) * step_scale + rng.random())))
        failed = bool(rng.random() < failure_rate)
        per_step = max(50.0, rng.normal(400, 80))
        inp = int(steps * per_step)
        out = int(steps * rng.normal(60, 10))
        runs.append(Run(
            start=starts[i % len(starts)], agent=agent, version=version, steps=steps, ok=not failed,
            stop_reason=str(rng.choice(FAILURE_REASONS)) if failed else c.StopReason.FINISH.value,
            input_tokens=inp, output_tokens=max(1, out), cost_usd=inp * 1.5e-7 + out * 6e-7,
            tool_errors=int(rng.poisson(0.3)), duration_ms=float(steps * rng.lognormal(6.5, 0.4)),
        ))
    return runs


def spread(start: datetime, end: datetime, n: int, rng: np.random.Generator) -> list[datetime]:
    """`n` random instants in [start, end), sorted."""
    total = (end - start) / timedelta(microseconds=1)
    return [start + timedelta(microseconds=float(x)) for x in np.sort(rng.random(n) * total)]


def encode(runs: Iterable[Run]) -> bytes:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({c.SERVICE_NAME: "synthetic-agents"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("steplens.tests.synthetic")
    for run in runs:
        end = run.start + timedelta(milliseconds=run.duration_ms)
        root = tracer.start_span(
            c.SPAN_RUN.format(agent=run.agent), kind=SpanKind.INTERNAL, start_time=ns(run.start),
            attributes={
                c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: run.agent,
                c.GEN_AI_AGENT_VERSION: run.version, c.RUN_OK: run.ok, c.RUN_STOP_REASON: run.stop_reason,
                c.RUN_STEPS: run.steps, c.RUN_MODE: c.RunMode.LIVE.value,
            },
        )
        if run.release is not None:
            root.set_attribute(c.RELEASE_NAME, run.release[0])
            root.set_attribute(c.RELEASE_COHORT, run.release[1])
        if run.handoff_reason is not None:
            root.set_attribute(c.RUN_HANDOFF_REASON, run.handoff_reason)
            root.set_attribute(c.RUN_HANDOFF_TARGET, "human")
        ctx = trace.set_span_in_context(root)
        chat = tracer.start_span(
            c.SPAN_CHAT.format(model="gpt-4o-mini"), context=ctx, kind=SpanKind.CLIENT, start_time=ns(run.start),
            attributes={
                c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
                c.GEN_AI_USAGE_INPUT_TOKENS: run.input_tokens, c.GEN_AI_USAGE_OUTPUT_TOKENS: run.output_tokens,
                c.COST_USD: run.cost_usd,
            },
        )
        chat.end(end_time=ns(end))
        for _ in range(run.tool_errors):
            tool = tracer.start_span(
                c.SPAN_TOOL.format(tool="lookup"), context=ctx, start_time=ns(run.start),
                attributes={c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_NAME: "lookup"},
            )
            tool.set_attribute(c.ERROR_TYPE, c.ToolErrorCode.TIMEOUT.value)
            tool.set_status(Status(StatusCode.ERROR, "tool timed out"))
            tool.end(end_time=ns(end))
        if not run.ok:
            root.set_status(Status(StatusCode.ERROR, run.stop_reason))
        root.end(end_time=ns(end))
    body = encode_spans(exporter.get_finished_spans()).SerializeToString()
    provider.shutdown()
    return body


def send(http_url: str, store: object, runs: list[Run], batch: int = 500) -> None:
    """POST the runs in batches and wait until they are queryable."""
    with httpx.Client(base_url=http_url, timeout=30) as client:
        for i in range(0, len(runs), batch):
            r = client.post("/v1/traces", content=encode(runs[i:i + batch]),
                            headers={"Content-Type": "application/x-protobuf"})
            assert r.status_code == 200, r.text
    assert store.wait_loaded(30), "spans acknowledged but not loaded within 30 s"  # type: ignore[attr-defined]


def store_overrides(backend: str, root: Path) -> dict[str, str]:
    """Settings that put a test server on `backend` (tests/ingest/api/harness.py BACKENDS): embedded
    chDB in `root` for clickhouse, nothing for duckdb (the default store)."""
    if backend == "clickhouse":
        return {"store": "clickhouse", "clickhouse_url": f"chdb://{root / 'clickhouse'}"}
    return {}


def wait_first_evaluation(url: str, timeout: float = 15.0, key: str | None = None) -> None:
    """The alert evaluator runs every rule once at startup; wait for that so a test's own check is
    the one that sees its data (otherwise the startup evaluation could race it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        rules = httpx.get(url + "/api/alerts", timeout=10, headers=headers).json()["rules"]
        if all(r["last_evaluated"] is not None for r in rules):
            return
        time.sleep(0.02)
    raise TimeoutError("alert rules were not evaluated at startup")
