"""The runs row is right whatever order a trace's spans arrive in, and is never duplicated."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import S, agent_run, new_trace_id, request

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store

FIXTURE = Path("/work/shared/fixtures/otel-genai-openai/traces-001.bin")

RUN_COLUMNS = (
    "agent, version, name, ok, stop_reason, steps, llm_calls, tool_calls, tool_errors, error_spans, "
    "input_tokens, output_tokens, round(cost_usd, 6), models, span_count, duration_ms, mode, eval_run_id, "
    "root_span_id, service"
)


def _run(store, trace_id: str) -> tuple:
    with store.read() as cur:
        rows = cur.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE trace_id = ?", [trace_id]).fetchall()
    assert len(rows) == 1, rows
    return rows[0]


def _expected(root: S) -> tuple:
    # 3 steps, the first tool call failing: 3 chat spans of 100/20 tokens and $0.001 each.
    return (
        "support_agent", "1.0", root.name, True, "finish", 3, 3, 3, 1, 1, 300, 60, 0.003,
        ["gpt-4o-mini"], 10, 4000.0, "live", "eval-7", root.span_id, "test-svc",
    )


async def test_all_in_one_batch(open_store) -> None:
    store = open_store()
    root, children = agent_run(steps=3, tool_error_steps=1)
    await store.submit("p", request([*children, root]))
    assert store.wait_loaded(10)
    assert _run(store, root.trace_id) == _expected(root)


async def test_children_first_then_root_in_a_later_batch(open_store) -> None:
    store = open_store()
    root, children = agent_run(steps=3, tool_error_steps=1)
    await store.submit("p", request(children[:4]))
    assert store.wait_loaded(10)
    partial = _run(store, root.trace_id)
    # No root yet: nothing root-derived, extent-based duration, the counts so far.
    assert partial[2] is None and partial[3] is None and partial[18] is None
    assert partial[15] == 1800.0  # extent of the spans seen: step 0 start (0.1 s) to step 1 end (1.9 s)
    assert partial[6:9] == (1, 1, 1) and partial[14] == 4  # step, chat, failed tool, step
    await store.submit("p", request(children[4:]))
    await store.submit("p", request([root]))
    assert store.wait_loaded(10)
    assert _run(store, root.trace_id) == _expected(root)


async def test_every_span_in_its_own_batch_in_random_order(open_store) -> None:
    store = open_store(commit_interval_ms=0)
    root, children = agent_run(steps=3, tool_error_steps=1)
    spans = [root, *children]
    random.Random(4).shuffle(spans)
    for span in spans:
        await store.submit("p", request([span]))
        assert store.wait_loaded(10)  # one load transaction per span: the merge runs every time
    assert _run(store, root.trace_id) == _expected(root)


async def test_outer_agent_wins_over_nested_agent_and_foreign_root(open_store) -> None:
    store = open_store()
    tid = new_trace_id()
    root, children = agent_run(trace_id=tid, steps=1, agent="outer")
    http = S(tid, "POST /chat", start=root.start, attrs={})  # a foreign parentless root (web framework)
    root.parent = http.span_id
    nested, nested_children = agent_run(trace_id=tid, steps=1, agent="inner")
    nested.parent = children[0].span_id
    nested.start = children[0].start
    for s in nested_children:
        s.start = nested.start
    await store.submit("p", request([http]))
    assert store.wait_loaded(10)
    assert _run(store, tid)[2] == "POST /chat"
    await store.submit("p", request([nested, *nested_children]))
    assert store.wait_loaded(10)
    assert _run(store, tid)[0] == "inner"  # an agent span beats a foreign root
    await store.submit("p", request([root, *children]))
    assert store.wait_loaded(10)
    run = _run(store, tid)
    assert run[0] == "outer" and run[18] == root.span_id  # the outermost agent is the run
    assert run[14] == 9 and run[6] == 2


async def test_foreign_client_fixture_runs(open_store) -> None:
    """The real OpenAI instrumentation capture: 2 traces, totals as in the fixture README."""
    store = open_store()
    await store.submit("p", ExportTraceServiceRequest.FromString(FIXTURE.read_bytes()))
    assert store.wait_loaded(10)
    with store.read() as cur:
        rows = cur.execute(
            "SELECT count(*), sum(span_count), sum(llm_calls), sum(tool_calls), sum(tool_errors), "
            "sum(error_spans), sum(input_tokens), sum(output_tokens), count(root_span_id) FROM runs"
        ).fetchone()
        agent_run_row = cur.execute(
            "SELECT agent, root_kind, ok, llm_calls FROM runs WHERE agent IS NOT NULL"
        ).fetchall()
    assert rows == (2, 7, 4, 2, 1, 2, 117, 47, 2)
    assert len(agent_run_row) == 1 and agent_run_row[0][:2] == ("weather_agent", "agent")
