"""A replanner's chat span counts toward its replan span whichever arrives first, in whichever batch,
and a retried batch never counts twice (plan_spans rows are recomputed, not incremented).

The spans are real (a traced PlanAndExecuteAgent run kept in memory), encoded by the OTLP exporter's
own encoder and POSTed to the real server in the order under test.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

import tracer
from kernel.plan import PlanRunResult
from tests.ingest.api.harness import BACKENDS, Server
from tests.ingest.api.plan_runs import global_run, unusable_then_patch_run


def _traced(scenario: Callable[[], Any]) -> tuple[PlanRunResult, list[ReadableSpan]]:
    handle = tracer.setup(service_name="replan-order", endpoint="memory")
    try:
        result = asyncio.run(scenario())
        return result, list(handle.memory_exporter.get_finished_spans())
    finally:
        handle.shutdown(timeout_s=2.0)


def _replanner_chats(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    replans = {s.context.span_id for s in spans if s.name.startswith("replan ")}
    return [s for s in spans if s.parent is not None and s.parent.span_id in replans]


@pytest.fixture(params=BACKENDS)
def server(request: pytest.FixtureRequest, start_ingest_server: Callable[..., Any]) -> Server:
    running = start_ingest_server(grpc_port=0, store=request.param)
    return Server(running.http_url, running.store, running.settings)


def test_children_first_parents_later_and_retries(server: Server) -> None:
    early, early_spans = _traced(unusable_then_patch_run)  # chats arrive before their replan spans
    late, late_spans = _traced(global_run)  # chats arrive after their replan spans
    early_chats, late_chats = _replanner_chats(early_spans), _replanner_chats(late_spans)
    assert len(early_chats) == 2 and len(late_chats) == 1

    server.send(encode_spans(early_chats))
    server.send(encode_spans([s for s in early_spans if s not in early_chats]))
    server.send(encode_spans([s for s in late_spans if s not in late_chats]))
    server.send(encode_spans(late_chats))
    server.send(encode_spans(late_chats + early_chats))  # a retried batch: stored once, counted once

    body = server.get("/api/replanning").json()
    records = [rec for r in (early, late) for rec in r.replans]
    cost = body["cost"]
    assert cost["replan_llm_calls"] == 3
    assert cost["replan_input_tokens"] == sum(rec.input_tokens for rec in records)
    assert cost["replan_output_tokens"] == sum(rec.output_tokens for rec in records)
    assert cost["reexecution_cost_usd"] == pytest.approx(late.reexecution_cost_usd) == pytest.approx(0.5)
    groups = {row["key"]: row for row in body["by_granularity"]}
    assert groups["patch"]["llm_calls"] == 2 and groups["patch"]["unusable"] == 1
    assert groups["global"]["llm_calls"] == 1
    assert groups["global"]["input_tokens"] == late.replans[0].input_tokens
    runs = {row["trace_id"]: row for row in body["runs"]}
    assert runs[late.trace_id]["run_cost_usd"] == pytest.approx(late.cost_usd, abs=1e-9)
    assert runs[early.trace_id]["run_cost_usd"] == pytest.approx(early.cost_usd, abs=1e-9)
