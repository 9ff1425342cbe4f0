"""Runs of clients that report no outcome get steps, ok, stop reason, agent and version from their spans
(design.md §3 "Runs of foreign clients"), whatever order and batches the spans arrive in."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.store import foreign_runs as f
from tests.ingest.store.otlp_build import S, agent_run, request

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store

COLUMNS = (
    "agent", "version", "name", "is_run", "ok", "stop_reason", "stop_reason_source", "steps", "llm_calls",
    "tool_calls", "tool_errors", "input_tokens", "output_tokens", "models", "failure_signature",
    "failure_evidence", "agents", "root_span_id",
)  # fmt: skip


def _run(store, trace_id: str) -> dict:
    with store.read() as cur:
        rows = cur.execute(f"SELECT {', '.join(COLUMNS)} FROM runs WHERE trace_id = ?", [trace_id]).fetchall()
    assert len(rows) == 1, rows
    run = dict(zip(COLUMNS, rows[0], strict=True))
    run["agents"] = json.loads(run["agents"]) if run["agents"] else None
    return run


async def _load(store, spans: list[S], **kwargs) -> dict:
    await store.submit("p", request(spans, **kwargs))
    assert store.wait_loaded(10)
    return _run(store, spans[0].trace_id)


async def test_agent_run_with_a_failing_tool_finishes_with_one_step_per_model_turn(open_store) -> None:
    run = await _load(open_store(), f.genai_agent(agent="weather_agent", version="2.1", turns=3))
    assert (run["agent"], run["version"], run["ok"], run["stop_reason"], run["stop_reason_source"]) == (
        "weather_agent", "2.1", True, "finish", "inferred")
    # 3 model turns, the first two asking for two tools each; the tool error is fed back to the model
    assert (run["steps"], run["llm_calls"], run["tool_calls"], run["tool_errors"]) == (3, 3, 4, 1)
    assert (run["input_tokens"], run["output_tokens"], run["models"]) == (300, 30, ["gpt-4o-mini"])
    assert run["failure_signature"] is None and run["failure_evidence"] is None


async def test_last_model_call_failing_fails_the_run_though_its_root_is_unset(open_store) -> None:
    run = await _load(open_store(), f.genai_agent(turns=2, last_call_fails=True))
    assert (run["ok"], run["stop_reason"], run["steps"], run["llm_calls"]) == (False, "llm_unavailable", 2, 2)
    assert run["failure_evidence"] == "InternalServerError: Error code: 500 - internal error"
    assert run["failure_signature"] == "llm InternalServerError: Error code: <num>"
    assert run["agents"][0]["ok"] is False  # the run's own agent span shares the run's outcome


@pytest.mark.parametrize(
    ("exception", "reason"),
    [
        (("agents.exceptions.MaxTurnsExceeded", "Max turns (3) exceeded"), "max_steps"),
        (("langgraph.errors.GraphRecursionError", "Recursion limit of 25 reached without hitting a stop condition."),
         "max_steps"),
        (("pydantic_ai.exceptions.UsageLimitExceeded", "The next request would exceed the request_limit of 3"),
         "max_steps"),
        (("pydantic_ai.exceptions.UsageLimitExceeded", "Exceeded the total_tokens_limit of 500 (total_tokens=612)"),
         "token_budget"),
        (("llama_index.core.workflow.errors.WorkflowRuntimeError", "Max iterations of 10 reached!"), "max_steps"),
        (("TimeoutError", ""), "timeout"),
        (("asyncio.exceptions.CancelledError", ""), "cancelled"),
        (("KeyError", "'city'"), "internal_error"),
    ],
)  # fmt: skip
async def test_root_exception_gives_its_stop_reason(open_store, exception: tuple[str, str], reason: str) -> None:
    run = await _load(open_store(), f.genai_agent(turns=2, tool_error=False, root_error=True, root_exception=exception))
    assert (run["ok"], run["stop_reason"], run["stop_reason_source"]) == (False, reason, "inferred")
    short = exception[0].rsplit(".", 1)[-1]
    assert run["failure_evidence"] == ": ".join(p for p in (short, exception[1]) if p)
    assert short in run["failure_signature"]


async def test_a_recorded_exception_fails_a_run_whose_root_status_is_unset(open_store) -> None:
    run = await _load(open_store(), f.genai_agent(turns=2, tool_error=False, root_exception=("RuntimeError", "boom")))
    assert (run["ok"], run["stop_reason"], run["failure_evidence"]) == (False, "internal_error", "RuntimeError: boom")


async def test_run_ended_by_a_failing_tool_is_tool_error_exhausted(open_store) -> None:
    spans = f.genai_agent(turns=2, tool_error=False, root_error=True, root_exception=("ValueError", "no such city"))
    root = spans[0]
    spans = [s for s in spans if not s.name.startswith("chat") or s.start < root.start + timedelta(seconds=1)]
    spans = [s for s in spans if "get_time" not in s.name]
    tool = next(s for s in spans if "get_weather" in s.name)
    tool.error, tool.exception = True, ("ValueError", "no such city")
    run = await _load(open_store(), spans)
    assert (run["ok"], run["stop_reason"], run["llm_calls"], run["tool_errors"]) == (False, "tool_error_exhausted", 1, 1)
    assert run["failure_signature"].startswith("tool[get_weather] ValueError")


async def test_retry_of_a_failed_model_call_is_an_attempt_not_a_step(open_store) -> None:
    spans = f.genai_agent(turns=2, tool_error=False)
    root, first = spans[0], spans[1]
    failed = f._chat(first.trace_id, root.span_id, first.start - timedelta(milliseconds=5), fail="RateLimitError")
    failed.duration = timedelta(milliseconds=4)
    run = await _load(open_store(), [*spans, failed])
    assert (run["ok"], run["stop_reason"], run["llm_calls"], run["steps"]) == (True, "finish", 3, 2)


async def test_nested_llm_spans_count_one_call_with_its_tokens_once(open_store) -> None:
    """LlamaIndex: 2 model requests, each seen as 3 LLM spans (wrapper, prepare, the call)."""
    store = open_store()
    spans = f.llamaindex_agent(turns=2)
    run = await _load(store, spans)
    assert (run["llm_calls"], run["steps"], run["input_tokens"], run["output_tokens"], run["tool_calls"]) == (
        2, 2, 100, 10, 1)  # fmt: skip
    with store.read() as cur:
        per_model = cur.execute("SELECT model, llm_calls, input_tokens FROM run_models WHERE trace_id = ?",
                                [spans[0].trace_id]).fetchall()  # fmt: skip
    assert per_model == [("gpt-4o-mini", 2, 100)]  # the analytics count what the run counts


async def test_framework_step_spans_are_the_steps_and_a_max_steps_error_fails_the_run(open_store) -> None:
    store = open_store()
    run = await _load(store, f.smolagents_agent(steps=3))
    assert (run["agent"], run["steps"], run["ok"], run["stop_reason"]) == ("CodeAgent.run", 3, True, "finish")
    run = await _load(store, f.smolagents_agent(steps=4, max_steps_error=True))
    assert (run["steps"], run["ok"], run["stop_reason"]) == (4, False, "max_steps")
    assert run["failure_evidence"] == "AgentMaxStepsError: Reached max steps."


async def test_graph_root_with_sub_agents_is_one_run_of_its_first_agent(open_store) -> None:
    """An unnamed graph (`LangGraph`, CrewAI's `Crew_<uuid>.kickoff`) is one run; its name is the
    graph's, its agent the first agent under it (the graph's own name names no agent)."""
    run = await _load(open_store(), f.langgraph_supervisor())
    assert (run["agent"], run["name"], run["steps"], run["llm_calls"], run["tool_calls"]) == (
        "supervisor", "LangGraph", 4, 4, 1)  # fmt: skip
    assert [(a["kind"], a["agent"]) for a in run["agents"]] == [
        ("workflow", "LangGraph"), ("agent", "supervisor"), ("agent", "researcher")]
    agents = {a["agent"]: a for a in run["agents"]}
    assert (agents["supervisor"]["llm_calls"], agents["supervisor"]["steps"], agents["supervisor"]["tool_calls"]) == (2, 2, 0)
    assert (agents["researcher"]["llm_calls"], agents["researcher"]["tool_calls"]) == (2, 1)
    assert agents["researcher"]["parent_span_id"] == agents["supervisor"]["span_id"]
    assert agents["researcher"]["input_tokens"] == 100
    assert agents["LangGraph"]["llm_calls"] == 0  # the graph made no call of its own


async def test_loop_cut_off_by_a_limit_without_an_error_is_max_steps(open_store) -> None:
    """Strands' turn limit: the run stops after a tool ran, before any model saw its result."""
    spans = f.genai_agent(turns=3, tool_error=False)
    root = spans[0]
    spans = [s for s in spans if not (s.name.startswith("chat") and s.start > root.start + timedelta(seconds=2))]
    run = await _load(open_store(), spans)
    assert (run["ok"], run["stop_reason"], run["steps"], run["failure_signature"]) == (False, "max_steps", 2, "max_steps")


async def test_a_trace_that_only_builds_an_agent_is_not_a_run(open_store) -> None:
    run = await _load(open_store(), f.create_agent_only())
    assert run["is_run"] is False and run["stop_reason"] is None


async def test_version_falls_back_to_the_service_version(open_store) -> None:
    store = open_store()
    run = await _load(store, f.genai_agent(), resource={"service.version": "3.4.0"})
    assert run["version"] == "3.4.0"
    run = await _load(store, f.genai_agent(version="1.2"), resource={"service.version": "3.4.0"})
    assert run["version"] == "1.2"


@pytest.mark.parametrize("build", [f.langgraph_supervisor, lambda: f.genai_agent(turns=3, last_call_fails=True)])
async def test_same_run_whatever_order_and_batches_the_spans_arrive_in(open_store, build) -> None:
    whole = open_store()
    spans = build()
    expected = await _load(whole, spans)
    pieces = open_store(commit_interval_ms=0, db=whole.settings.db.with_name("pieces.duckdb"))
    shuffled = spans[:]
    random.Random(7).shuffle(shuffled)
    for span in shuffled:  # one load and one upkeep pass per span: every partial trace is derived
        await pieces.submit("p", request([span]))
        assert pieces.wait_loaded(10)
    got = _run(pieces, spans[0].trace_id)
    assert got == expected


async def test_kernel_runs_keep_what_their_run_span_reported(open_store) -> None:
    store = open_store()
    root, children = agent_run(steps=3, tool_error_steps=1, ok=False)
    run = await _load(store, [*children, root])
    assert (run["ok"], run["stop_reason"], run["steps"], run["stop_reason_source"]) == (False, "max_steps", 3, "reported")
    assert run["agents"] is None
