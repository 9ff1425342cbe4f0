"""What the queue tests share: a real server with score configs and a fast filler, real OTLP runs,
and small HTTP helpers. The expected sample is computed here from SHA-256 directly (not through
ingest.queues.sampling), so a change to how the server samples is caught, not mirrored."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from ingest.scores.configs import ScoreConfig
from tests.ingest.api.otlp_runs import T0, Emitter, RunSpec, ns

CONFIGS = [
    ScoreConfig(name="correct", data_type="boolean"),  # type: ignore[arg-type]
    ScoreConfig(name="helpfulness", data_type="numeric", min=1, max=5),  # type: ignore[arg-type]
    ScoreConfig(name="tone", data_type="categorical", categories=["polite", "neutral", "rude"]),  # type: ignore[arg-type]
]
FILL_INTERVAL_S = 0.2


def expected_in_sample(project: str, queue: str, trace_id: str, rate: float) -> bool:
    digest = hashlib.sha256(f"{project}\x1f{queue}\x1f{trace_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


@dataclass
class Api:
    base: str
    key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.key:
            self.headers = {"x-api-key": self.key}

    def call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        return httpx.request(method, self.base + path, headers=self.headers, timeout=30, **kw)

    def ok(self, method: str, path: str, **kw: Any) -> Any:
        r = self.call(method, path, **kw)
        assert r.status_code < 300, f"{method} {path}: {r.status_code} {r.text[:500]}"
        return r.json() if r.content else None

    def create(self, name: str, **spec: Any) -> dict[str, Any]:
        body = {"name": name, "score_configs": ["correct"], **spec}
        return self.ok("POST", "/api/queues", json=body)

    def items(self, name: str, **params: Any) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = self.ok("GET", f"/api/queues/{name}/items",
                           params={"limit": 1000, **params, **({"cursor": cursor} if cursor else {})})
            out += page["items"]
            cursor = page["next"]
            if cursor is None:
                return out

    def send(self, emitter: Emitter) -> None:
        self.send_request(emitter.request())

    def send_request(self, request: Any) -> None:
        r = httpx.post(self.base + "/v1/traces", content=request.SerializeToString(),
                       headers={"content-type": "application/x-protobuf", **self.headers}, timeout=60)
        assert r.status_code == 200, r.text


def late_span(emitter: Emitter, trace_id: str, name: str = "late_tool_span") -> None:
    """A span of an existing trace (parented to a span id of its own making), sent after the run."""
    parent = SpanContext(int(trace_id, 16), 0x1234567890ABCDEF, is_remote=True, trace_flags=TraceFlags(1))
    span = emitter.tracer.start_span(name, context=trace.set_span_in_context(NonRecordingSpan(parent)),
                                     start_time=ns(T0))
    span.end(end_time=ns(T0 + timedelta(milliseconds=1)))


def emit_runs(emitter: Emitter, n: int, start_offset: timedelta = timedelta(0), **spec: Any) -> list[RunSpec]:
    return [emitter.run(RunSpec(start=T0 + start_offset + timedelta(seconds=i), **spec)) for i in range(n)]


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def settle(api: Api, name: str, store: Any) -> int:
    """Wait until everything sent is loaded and a live pass STARTED after that; the queue's total."""
    assert store.wait_loaded(60)
    loaded = datetime.now(UTC)

    def passed() -> bool:
        last = api.ok("GET", f"/api/queues/{name}")["last_fill"]
        return last is not None and datetime.fromisoformat(last) > loaded

    wait_for(passed, what=f"a live pass of queue {name} after the load")
    return api.ok("GET", f"/api/queues/{name}")["progress"]["total"]
