"""`/api/sessions` groups runs by conversation id with exact per-turn and total figures, pages by cursor,
answers a transcript, and never mixes in another project's runs of the same conversation id.

The failure this covers: there was no way to see "this user's conversation": runs of one conversation
were separate rows of /api/runs, and summing their tokens and cost was left to the reader.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from ingest.config import ApiKey
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import T0, Emitter, RunSpec, ns
from tracer import conventions as c

# every test here runs once per store: the answers must be the same on both
pytestmark = pytest.mark.parametrize("backend", BACKENDS)

KEY_A, KEY_B = "sessions-key-a-0123456789", "sessions-key-b-0123456789"
WINDOW = {"since": (T0 - timedelta(days=1)).isoformat(), "until": (T0 + timedelta(days=1)).isoformat()}
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "frameworks"
ODD = "thread/7 #a?b%2F"  # a conversation id is any string: slashes, spaces, URL syntax


def _told_run(emitter: Emitter, conversation: str, user: str, task: str, answer: str, start: Any) -> str:
    """A kernel run span carrying its task and answer (content capture on), with one LLM call."""
    root = emitter.tracer.start_span(
        c.SPAN_RUN.format(agent="support_agent"), start_time=ns(start),
        attributes={c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: "support_agent",
                    c.RUN_OK: True, c.RUN_STOP_REASON: "finish", c.RUN_STEPS: 1, c.RUN_MODE: "live",
                    c.GEN_AI_CONVERSATION_ID: conversation, c.ENDUSER_ID: user, c.RUN_TASK: task,
                    c.RUN_ANSWER: answer},
    )  # fmt: skip
    root.end(end_time=ns(start + timedelta(seconds=1)))
    return format(root.get_span_context().trace_id, "032x")


@pytest.fixture
def world(make_server: Any) -> dict[str, Any]:
    server = make_server(api_keys=[ApiKey(key=KEY_A, project="A"), ApiKey(key=KEY_B, project="B")])
    emitter = Emitter()
    c1 = [emitter.run(RunSpec(start=T0 + timedelta(minutes=i), steps=i + 1, conversation="conv-1", user="u1",
                              ok=i != 1, stop_reason="finish" if i != 1 else "max_steps"))
          for i in range(3)]  # fmt: skip
    c2 = [emitter.run(RunSpec(start=T0 + timedelta(minutes=10 + i), steps=2, conversation="conv-2", user=user))
          for i, user in enumerate(("u2", "u3"))]  # fmt: skip
    lone = emitter.run(RunSpec(start=T0 + timedelta(minutes=20)))  # no conversation: in no session
    odd = emitter.run(RunSpec(start=T0 - timedelta(hours=1), conversation=ODD))
    told = [_told_run(emitter, "conv-told", "u4", f"question {i}", f"answer {i}", T0 + timedelta(minutes=30 + i))
            for i in range(2)]  # fmt: skip
    server.send(emitter.request(), key=KEY_A)
    b_run = emitter.run(RunSpec(start=T0 + timedelta(minutes=5), agent="agent_of_b", conversation="conv-1", user="ub"))
    server.send(emitter.request(), key=KEY_B)
    return {"server": server, "c1": c1, "c2": c2, "lone": lone, "told": told, "b_run": b_run, "odd": odd}


def test_list_totals_order_paging_and_user_filter(world: dict[str, Any]) -> None:
    server = world["server"]
    page = server.get("/api/sessions", key=KEY_A, **WINDOW).json()
    assert [s["session_id"] for s in page["sessions"]] == ["conv-told", "conv-2", "conv-1", ODD]
    assert page["next"] is None
    one = next(s for s in page["sessions"] if s["session_id"] == "conv-1")
    runs = world["c1"]
    assert one["runs"] == 3 and one["project"] == "A"
    assert one["input_tokens"] == sum(r.input_tokens for r in runs) == 600
    assert one["output_tokens"] == sum(r.output_tokens for r in runs) == 120
    assert one["cost_usd"] == pytest.approx(sum(r.cost_usd for r in runs))
    assert one["steps"] == 6 and one["failures"] == 1
    assert one["users"] == ["u1"] and one["agents"] == ["support_agent"]
    first, last = runs[0], runs[-1]
    assert one["duration_ms"] == pytest.approx(((last.start + last.duration) - first.start) / timedelta(milliseconds=1))
    two = next(s for s in page["sessions"] if s["session_id"] == "conv-2")
    assert two["users"] == ["u2", "u3"] and two["runs"] == 2 and two["failures"] == 0

    seen, cursor = [], None
    while True:
        got = server.get("/api/sessions", key=KEY_A, limit=1, cursor=cursor, **WINDOW).json()
        seen += [s["session_id"] for s in got["sessions"]]
        cursor = got["next"]
        if cursor is None:
            break
    assert seen == ["conv-told", "conv-2", "conv-1", ODD]
    assert [s["session_id"] for s in server.get("/api/sessions", key=KEY_A, user="u3", **WINDOW).json()["sessions"]] \
        == ["conv-2"]
    assert server.get("/api/sessions", key=KEY_A, cursor="not-a-cursor", **WINDOW).status_code == 400


def test_one_session_has_its_turns_in_order_with_a_transcript(world: dict[str, Any]) -> None:
    server = world["server"]
    session = server.get("/api/sessions/conv-1", key=KEY_A).json()
    assert [t["trace_id"] for t in session["turns"]] == [r.trace_id for r in world["c1"]]
    assert [t["turn"] for t in session["turns"]] == [1, 2, 3]
    assert [t["input_tokens"] for t in session["turns"]] == [100, 200, 300]
    assert [t["ok"] for t in session["turns"]] == [True, False, True]
    assert session["turns_total"] == session["runs"] == 3 and session["failures"] == 1
    assert session["input_tokens"] == 600 and session["users"] == ["u1"]

    odd = server.get(f"/api/sessions/{quote(ODD, safe='')}", key=KEY_A).json()
    assert odd["session_id"] == ODD and [t["trace_id"] for t in odd["turns"]] == [world["odd"].trace_id]

    told = server.get("/api/sessions/conv-told", key=KEY_A).json()
    assert [(t["input"], t["output"]) for t in told["turns"]] == [("question 0", "answer 0"), ("question 1", "answer 1")]
    assert [t["trace_id"] for t in told["turns"]] == world["told"]


def test_a_key_never_reads_another_projects_session(world: dict[str, Any]) -> None:
    server = world["server"]
    b_view = server.get("/api/sessions/conv-1", key=KEY_B).json()
    assert [t["trace_id"] for t in b_view["turns"]] == [world["b_run"].trace_id] and b_view["project"] == "B"
    a_view = server.get("/api/sessions/conv-1", key=KEY_A, project="B")
    assert a_view.status_code == 404
    assert world["b_run"].trace_id not in server.get("/api/sessions", key=KEY_A, **WINDOW).text
    assert "agent_of_b" not in server.get("/api/sessions", key=KEY_A, project="B", **WINDOW).text


def test_captured_adk_runs_are_sessions_with_what_the_user_asked_and_the_agent_answered(server: Any) -> None:
    """Google ADK sends gen_ai.conversation.id; its input and answer are in the LLM calls' messages."""
    spec = json.loads((FIXTURES / "google_adk" / "manifest.json").read_text())
    for body in spec["bodies"]:
        headers = {"Content-Type": body["content_type"]}
        if body.get("content_encoding"):
            headers["Content-Encoding"] = body["content_encoding"]
        with server.client() as client:
            assert client.post(body["path"], content=(FIXTURES / "google_adk" / body["file"]).read_bytes(),
                               headers=headers).status_code == 200  # fmt: skip
    assert server.store.wait_loaded(60)
    sessions = server.get("/api/sessions", since="2000-01-01T00:00:00Z").json()["sessions"]
    by_trace = {}
    for s in sessions:
        detail = server.get(f"/api/sessions/{s['session_id']}").json()
        for turn in detail["turns"]:
            by_trace[turn["trace_id"]] = (s, turn)
    assert sorted(by_trace) == sorted(r["trace_id"] for r in spec["runs"])  # every ADK run is in a session
    for run in spec["runs"]:
        summary, turn = by_trace[run["trace_id"]]
        assert (summary["input_tokens"], summary["output_tokens"]) == (run["input_tokens"], run["output_tokens"])
        assert summary["failures"] == (0 if run["ok"] else 1)
        assert turn["input"] == "Weather and time in Paris?"  # the capture script's user message
    tool_error = next(r for r in spec["runs"] if r["scenario"] == "tool_error")
    assert by_trace[tool_error["trace_id"]][1]["output"] == "Paris is sunny at 21 C; the time service is down."


def test_captured_langfuse_runs_of_one_session_id_are_one_session_with_their_transcript(server: Any) -> None:
    """The Langfuse SDK's `propagate_attributes(session_id=...)` puts `session.id` on every observation: its
    three captured runs (tool_error, llm_error, turn_limit) are the turns of one session, in the order they
    ran, each asked what the capture script asked (the decorated agent's first argument)."""
    spec = json.loads((FIXTURES / "langfuse_sdk" / "manifest.json").read_text())
    for body in spec["bodies"]:
        headers = {"Content-Type": body["content_type"]}
        if body.get("content_encoding"):
            headers["Content-Encoding"] = body["content_encoding"]
        with server.client() as client:
            assert client.post(body["path"], content=(FIXTURES / "langfuse_sdk" / body["file"]).read_bytes(),
                               headers=headers).status_code == 200  # fmt: skip
    assert server.store.wait_loaded(60)
    session = server.get("/api/sessions/capture-session").json()
    runs = {r["trace_id"]: r for r in spec["runs"]}
    assert sorted(t["trace_id"] for t in session["turns"]) == sorted(runs)
    starts = [t["start_time"] for t in session["turns"]]
    assert starts == sorted(starts)
    assert session["input_tokens"] == sum(r["input_tokens"] for r in spec["runs"])
    assert session["failures"] == sum(1 for r in spec["runs"] if not r["ok"])
    assert [t["input"] for t in session["turns"]] == ["Weather and time in Paris?"] * len(runs)
    by_scenario = {runs[t["trace_id"]]["scenario"]: t for t in session["turns"]}
    assert by_scenario["tool_error"]["output"] == "Paris is sunny at 21 C; the time service is down."
    listed = server.get("/api/sessions", since="2000-01-01T00:00:00Z").json()["sessions"]
    assert [(s["session_id"], s["runs"]) for s in listed] == [("capture-session", len(runs))]
