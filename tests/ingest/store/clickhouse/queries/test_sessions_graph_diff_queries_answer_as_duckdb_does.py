"""The ClickHouse sessions, agent-graph and diff queries return what DuckDB's return over the same
spans: three conversations (one across two projects, one cut by the time range), a run without
one, users, a run's task and answer, LLM messages, tool arguments and results (JSON objects,
plain text and a number), step observations, logged message events, a failed tool call, a late
root and a retried batch, each loaded through the store's own receive path."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from ingest.api.diffing import align, run_steps
from ingest.api.graph_build import build_graph
from ingest.queries.filters import CommonFilters
from ingest.queries.sessions import SessionFilters
from ingest.store.backend import CLICKHOUSE_QUERIES, DUCKDB_QUERIES
from tests.ingest.store.clickhouse.queries.test_ported_queries_answer_as_duckdb_does import (
    _first_difference,
    _plain,
)
from tests.ingest.store.crash_writer import logs_for
from tests.ingest.store.otlp_build import T0, S, agent_run, request
from tracer import conventions as c

SESSION_FILTERS = {
    "all": SessionFilters(modes=None),
    "window": SessionFilters(since=T0 + timedelta(minutes=4), until=T0 + timedelta(hours=1)),
    "user": SessionFilters(user="u2"),
    "project": SessionFilters(projects=frozenset({"p"})),
    "agent": SessionFilters(agent="billing_agent"),
}


def _run(i: int, conversation: str | None, user: str | None) -> tuple[S, list[S]]:
    root, children = agent_run(
        start=T0 + timedelta(minutes=3 * i), agent="billing_agent" if i % 2 else "support_agent",
        steps=1 + i % 3, tool_error_steps=1 if i == 3 else 0, ok=i != 3,
    )  # fmt: skip
    if conversation:
        root.attrs[c.GEN_AI_CONVERSATION_ID] = conversation
    if user:
        root.attrs[c.ENDUSER_ID] = user
    root.attrs[c.RUN_TASK] = f"question {i}"
    root.attrs[c.RUN_ANSWER] = f"answer {i}"
    for k, span in enumerate(children):
        if span.name.startswith("chat"):
            span.attrs[c.GEN_AI_INPUT_MESSAGES] = json.dumps([{"role": "user", "content": f"q{i}.{k}"}])
            span.attrs[c.GEN_AI_OUTPUT_MESSAGES] = json.dumps([{"role": "assistant", "content": f"a{i}.{k}"}])
        elif span.name.startswith("execute_tool"):
            span.attrs[c.GEN_AI_TOOL_CALL_ARGUMENTS] = json.dumps({"q": f"refund {i}", "k": k})
            span.attrs[c.GEN_AI_TOOL_CALL_RESULT] = f"{k} hits"
        else:  # a step: a number as the observation of one, text elsewhere
            span.attrs[c.STEP_OBSERVATION] = 42 if k == 0 and i == 2 else f"saw {i}.{k}"
    return root, children


@pytest.fixture
async def stores(open_ch_store, open_store, tmp_path):
    ch = open_ch_store(db=tmp_path / "ch" / "steplens.duckdb")
    duck = open_store()
    plan = [("conv-1", "u1"), ("conv-1", "u2"), ("conv-2", "u2"), (None, None), ("conv-3", "u3"), ("conv-1", "u1")]
    requests = []
    for i, (conversation, user) in enumerate(plan):
        root, children = _run(i, conversation, user)
        if i == 5:  # the root arrives late, after its children; the children batch is retried
            requests += [("p", request(children)), ("p", request(children)), ("p", request([root]))]
        else:
            requests.append(("q" if i == 4 else "p", request([root, *children])))
    other_root, other_children = _run(6, "conv-1", "u9")  # another project's run of the same conversation id
    requests.append(("q", request([other_root, *other_children])))
    first_turn = requests[0][1]  # its spans' user-message events are logged too (the transcript's last resort)
    for store in (ch, duck):
        for project, req in requests:
            await store.submit(project, req)
            assert store.wait_loaded(30)
        await store.submit_logs("p", logs_for(first_turn))
        assert store.wait_loaded(30)
    return duck, ch


def _both(stores: tuple[Any, Any], call: Any) -> tuple[Any, Any]:
    duck, ch = stores
    with duck.read() as cur:
        want = _plain(call(DUCKDB_QUERIES, cur))
    with ch.read() as cur:
        got = _plain(call(CLICKHOUSE_QUERIES, cur))
    return want, got


def _pages(q: Any, cur: Any, f: SessionFilters) -> list[Any]:
    """Every page of one row each, then the whole list in one page."""
    pages, after = [], None
    while True:
        rows, after = q.sessions.list_sessions(cur, f, 1, after)
        pages.append(rows)
        if after is None:
            break
    return [pages, q.sessions.list_sessions(cur, f, 50, None)[0]]


def test_session_lists_and_pages_equal(stores) -> None:
    for name, f in SESSION_FILTERS.items():
        want, got = _both(stores, lambda q, cur, f=f: _pages(q, cur, f))
        assert got == want, (name, _first_difference(got, want))
    want, _ = _both(stores, lambda q, cur: _pages(q, cur, SESSION_FILTERS["all"]))
    # not vacuous: every conversation of both projects, conv-1 once per project
    assert sorted((s["project"], s["session_id"]) for s in want[1]) == [
        ("p", "conv-1"), ("p", "conv-2"), ("q", "conv-1"), ("q", "conv-3")]  # fmt: skip
    assert next(s for s in want[1] if s["session_id"] == "conv-1" and s["project"] == "p")["users"] == ["u1", "u2"]


def _session(q: Any, cur: Any, session_id: str, f: CommonFilters) -> Any:
    project, turns, total = q.sessions.session_turns(cur, session_id, f, 1000)
    content = q.sessions.turn_content(cur, project, turns) if project else {}
    return project, turns, total, content


def test_session_turns_and_transcript_content_equal(stores) -> None:
    for session_id in ("conv-1", "conv-2", "conv-3", "nobody's"):
        for f in (CommonFilters(modes=None), CommonFilters(projects=frozenset({"q"}))):
            want, got = _both(stores, lambda q, cur, s=session_id, f=f: _session(q, cur, s, f))
            assert got == want, (session_id, f, _first_difference(got, want))
    want, _ = _both(stores, lambda q, cur: _session(q, cur, "conv-1", CommonFilters(modes=None)))
    project, turns, total, content = want
    assert project == "p" and total == len(turns) == 3
    first = content[turns[0]["trace_id"]]
    assert first["root"][c.RUN_TASK] == "question 0" and "q0.1" in first["first_llm"][c.GEN_AI_INPUT_MESSAGES]
    assert len(first["logs"]) == 4 and not content[turns[1]["trace_id"]]["logs"]  # root, step, chat, tool


def _graph(q: Any, cur: Any, f: CommonFilters, max_runs: int) -> Any:
    runs, matched, lo, hi = q.graph.graph_runs(cur, f, max_runs)
    spans = sorted(q.graph.graph_spans(cur, runs, lo, hi), key=lambda s: (s["project"], s["trace_id"], s["span_id"]))
    return runs, matched, lo, hi, spans, build_graph(runs, spans)


def test_graph_runs_spans_and_graph_equal(stores) -> None:
    for max_runs in (2, 500):
        for f in (CommonFilters(modes=None), CommonFilters(agent="support_agent"), CommonFilters(projects=frozenset())):
            want, got = _both(stores, lambda q, cur, f=f, n=max_runs: _graph(q, cur, f, n))
            assert got == want, (max_runs, f, _first_difference(got, want))
    want, _ = _both(stores, lambda q, cur: _graph(q, cur, CommonFilters(modes=None), 500))
    assert want[1] == len(want[0]) == 7 and want[5]["edges"]


def test_step_spans_and_their_alignment_equal(stores) -> None:
    duck, _ = stores
    with duck.read() as cur:
        traces = [r["trace_id"] for r in DUCKDB_QUERIES.graph.graph_runs(cur, CommonFilters(modes=None), 50)[0]]

    def steps(q: Any, cur: Any) -> Any:
        out = {}
        for tid in traces:
            run = q.runs.find_runs_by_trace(cur, tid, None)[0]
            out[tid] = q.diff.step_spans(cur, tid, run["project"], run["span_start"], run["span_end"])
        return out

    want, got = _both(stores, steps)
    assert got == want, _first_difference(got, want)
    assert {r["observation"] for rows in want.values() for r in rows} >= {"42", "saw 0.0"}
    a, b = want[traces[0]], want[traces[1]]
    assert align(run_steps(a), run_steps(b))[1] is not None
