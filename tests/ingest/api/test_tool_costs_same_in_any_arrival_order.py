"""Tool cost parts and failure signatures do not depend on how the spans were batched.

The same run is sent whole, span by span in end order (root last: the run's agent/version reach the
tool rows after them) and span by span reversed (root first, tool spans before the LLM calls that
chose them): per-tool stats, filtered by agent, must be identical.
"""

from __future__ import annotations

import pytest

from tests.ingest.api.analytics_runs import Chat, Run, RunEmitter, Step, Tool
from tests.ingest.api.analytics_server import start_priced_server
from tests.ingest.api.harness import BACKENDS


def the_run(agent: str) -> Run:
    return Run(
        agent=agent,
        ok=False,
        stop_reason="tool_error_exhausted",
        steps=[
            Step(chats=[Chat(cost=0.2)], tools=[Tool("search", {"q": 1}, "r", cost=0.03, observation_tokens=150)]),
            Step(
                chats=[Chat(cost=0.1), Chat(cost=0.3)],
                tools=[Tool("fetch", {"u": 1}, error_type="timeout", error_message="fetch timed out after 5 s",
                            observation_tokens=20)],
            ),
            Step(chats=[Chat(cost=0.4)]),
        ],
    )  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
def test_whole_and_reversed_single_span_batches_agree(start_ingest_server, tmp_path, backend):
    server = start_priced_server(start_ingest_server, tmp_path, backend)
    emitter = RunEmitter()
    emitter.run(the_run("whole"))
    server.send(emitter.request())
    emitter.run(the_run("pieces"))
    for request in emitter.requests_one_span_each(reverse=True):
        server.send(request)
    emitter.run(the_run("forward"))
    for request in emitter.requests_one_span_each():
        server.send(request)

    whole = server.get("/api/tools", agent="whole").json()["tools"]
    pieces = server.get("/api/tools", agent="pieces").json()["tools"]
    forward = server.get("/api/tools", agent="forward").json()["tools"]
    for t in whole + pieces + forward:
        t.pop("examples")
    assert whole == pieces == forward
    by_model = server.get("/api/cost", group_by="model", agent="forward").json()["rows"]
    assert by_model[0]["runs"] == 1 and by_model[0]["cost_usd"] == pytest.approx(1.0)
    search = next(t for t in whole if t["tool"] == "search")["cost"]
    assert (search["direct"], search["decision"], search["carry"]) == pytest.approx((0.03, 0.2, 0.45))
    fetch = next(t for t in whole if t["tool"] == "fetch")
    assert fetch["cost"]["decision"] == pytest.approx(0.4) and fetch["cost"]["carry"] == pytest.approx(0.02)
    assert fetch["errors_by_type"] == {"timeout": 1} and fetch["timeouts"] == 1

    signatures = {
        r["agent"]: r["failure_signature"] for r in server.get("/api/runs").json()["runs"]
    }
    assert signatures == dict.fromkeys(("whole", "pieces", "forward"), "tool[fetch] timeout: fetch timed out after <num> s")
