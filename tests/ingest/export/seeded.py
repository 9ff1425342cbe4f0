"""Runs made by the real OpenTelemetry SDK, sent as OTLP/HTTP protobuf to a real server, for the
export and MCP tests: kernel-shaped runs with content, numbers, lists, booleans and exception events,
and scores through `POST /api/scores`. Each seeded run keeps what was sent, to compare against."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx

from tests.ingest.api.content_runs import ContentRun, ToolCall, emit
from tests.ingest.api.otlp_runs import T0, Emitter, RunSpec

# a tool result longer than the shortest field cut of the MCP transcript (50 characters)
ORDER_RESULT = '{"status": "delivered", "carrier": "DHL", "parcel": "JJD000390007", "items": 3, "paid": "750 EUR"}'


@dataclass
class Seeded:
    """What one project received: its runs (content runs and plain runs) and every span id sent."""

    content: list[ContentRun] = field(default_factory=list)
    plain: list[RunSpec] = field(default_factory=list)
    span_ids: set[tuple[str, str]] = field(default_factory=set)  # (trace_id, span_id)
    scores: list[dict[str, Any]] = field(default_factory=list)

    @property
    def trace_ids(self) -> set[str]:
        return {r.trace_id for r in self.content} | {r.trace_id for r in self.plain}


def post_otlp(base: str, emitter: Emitter, key: str | None, into: Seeded) -> None:
    request = emitter.request()
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            into.span_ids.update((s.trace_id.hex(), s.span_id.hex()) for s in ss.spans)
    headers = {"content-type": "application/x-protobuf", **({"authorization": f"Bearer {key}"} if key else {})}
    r = httpx.post(base + "/v1/traces", content=request.SerializeToString(), headers=headers, timeout=30)
    assert r.status_code == 200, r.text


def seed(base: str, store: Any, agent: str = "refund_agent", key: str | None = None, plain_runs: int = 2,
         score_key: str | None = None, day: int = 0) -> Seeded:
    """Two content runs (one failing with an exception event), `plain_runs` plain runs, two scores."""
    out = Seeded()
    emitter = Emitter(service=f"{agent}-svc")
    start = T0 + timedelta(days=day)
    out.content.append(emit(emitter, ContentRun(
        agent=agent, task="refund order 1234 for the customer", answer="refunded 750 EUR", start=start,
        calls=[ToolCall("lookup_order", {"order": 1234}, result=ORDER_RESULT),
               ToolCall("refund", {"amount": 750, "currency": "EUR"}, result="refund accepted",
                        extra={"refund.amount": 750, "refund.ratio": 0.25, "refund.tags": ["vip", "eu"],
                               "refund.manual": True})],
    )))  # fmt: skip
    out.content.append(emit(emitter, ContentRun(
        agent=agent, task="refund order 99 again", start=start + timedelta(minutes=1), ok=False,
        calls=[ToolCall("refund", {"amount": 20}, result="", error="payment gateway timeout after 30 s")],
    )))  # fmt: skip
    for i in range(plain_runs):
        out.plain.append(emitter.run(RunSpec(agent=agent, start=start + timedelta(minutes=2 + i), steps=2 + i % 2,
                                             failing_tools=i % 2)))
    post_otlp(base, emitter, key, out)
    if score_key is not None or key is None:
        headers = {"authorization": f"Bearer {score_key}"} if score_key else {}
        scores = [{"name": "helpfulness", "value": 0.8, "trace_id": out.content[0].trace_id, "comment": "good",
                   "created_at": start.isoformat()},
                  {"name": "resolved", "value": False, "trace_id": out.content[1].trace_id,
                   "created_at": (start + timedelta(minutes=1)).isoformat()}]
        r = httpx.post(base + "/api/scores", json=scores, headers=headers, timeout=30)
        assert r.status_code == 200, r.text
        out.scores = scores
    assert store.wait_loaded(30), "acknowledged spans were not loaded within 30 s"
    return out
