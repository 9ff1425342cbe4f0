"""Failed runs cluster by stop reason, then by the last error's kind + tool + type + masked message.

Messages that differ only in numbers and paths share a cluster; a run whose error span arrives in
a later request than its root still gets its signature; a run that failed without any error span
clusters by its stop reason alone; a foreign (OpenInference-style) client's exception is clustered
too, under the stop reason inferred from it (its failing tool ended the run); successful runs are not
counted.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from ingest.normalize.error_template import message_template
from tests.ingest.api.analytics_runs import Chat, Run, RunEmitter, Step, Tool
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import T0
from tracer.conventions import StopReason

LOOKUP_SIGNATURE = "tool[lookup] timeout: lookup timed out after <num> s reading <path>"
LLM_SIGNATURE = "llm RateLimitError: Rate limit reached for <id> in <num>ms"


def lookup_timeout(seconds: int, path: str, version: str = "1.0", start=T0) -> Run:
    return Run(
        agent="support",
        version=version,
        ok=False,
        stop_reason=StopReason.TOOL_ERROR_EXHAUSTED.value,
        start=start,
        steps=[
            Step(tools=[Tool("lookup", {"id": 1}, "ok")]),
            Step(
                tools=[
                    Tool("lookup", error_type="timeout", error_message=f"lookup timed out after {seconds} s reading {path}")
                ]
            ),
        ],
    )


def rate_limited(org: str, ms: int, start, earlier_tool_error: bool = False) -> Run:
    first = Step(tools=[Tool("lookup", error_type="exception", error_message="boom 1")]) if earlier_tool_error else Step()
    return Run(
        agent="support",
        ok=False,
        stop_reason=StopReason.LLM_UNAVAILABLE.value,
        start=start,
        steps=[
            first,
            Step(chats=[Chat(error_type="RateLimitError", error_message=f"Rate limit reached for {org} in {ms}ms")]),
        ],
    )


@pytest.fixture
def loaded(server):
    emitter = RunEmitter()
    minute = timedelta(minutes=1)
    runs = [
        emitter.run(lookup_timeout(30, "/data/orders/123.json", start=T0)),
        emitter.run(lookup_timeout(45, "/data/orders/987.json", start=T0 + minute)),
        rate_limited("org-abc123def", 20, T0 + 2 * minute),
        rate_limited("org-zz99887766", 350, T0 + 3 * minute, earlier_tool_error=True),
        Run(agent="support", ok=False, stop_reason=StopReason.MAX_STEPS.value, start=T0 + 4 * minute,
            steps=[Step(tools=[Tool("lookup", {"id": 2}, "ok")])] * 3),
    ]  # fmt: skip
    for spec in runs[2:]:
        emitter.run(spec)
    for i in range(4):
        emitter.run(Run(agent="support", start=T0 + i * minute, steps=[Step(tools=[Tool("lookup", {"id": i}, "ok")])]))
    server.send(emitter.request())

    # A third lookup timeout (version 2.0) whose root arrives BEFORE its failed tool span.
    late = emitter.run(lookup_timeout(12, "/srv/x/y.csv", version="2.0", start=T0 + 5 * minute))
    for request in emitter.requests_one_span_each(reverse=True):
        server.send(request)
    foreign = emitter.foreign_failed_run(T0 + 6 * minute, "db_query", "OperationalError", 'connection to "db-7" refused')
    server.send(emitter.request())
    return runs, late, foreign


@pytest.mark.parametrize("backend", BACKENDS)
def test_clusters_counts_and_signatures(server, loaded):
    runs, late, foreign = loaded
    r = server.get("/api/failures", since="2025-03-01T11:00:00Z", until="2025-03-01T13:00:00Z")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["total_failed"] == 7  # 3 lookup timeouts, 2 rate limits, 1 max_steps, 1 foreign
    clusters = {(c["stop_reason"], c["signature"]): c for c in body["clusters"]}
    assert set(clusters) == {
        ("tool_error_exhausted", LOOKUP_SIGNATURE),
        ("llm_unavailable", LLM_SIGNATURE),
        ("max_steps", "max_steps"),
        ("tool_error_exhausted", "tool[db_query] OperationalError: " + message_template('connection to "db-7" refused')),
    }
    counts = [c["count"] for c in body["clusters"]]
    assert counts == sorted(counts, reverse=True) and sum(counts) == 7

    lookup = clusters[("tool_error_exhausted", LOOKUP_SIGNATURE)]
    assert lookup["count"] == 3 and lookup["share"] == pytest.approx(3 / 7)
    assert (lookup["span_kind"], lookup["tool"], lookup["error_type"]) == ("tool", "lookup", "timeout")
    assert lookup["message_template"] == "lookup timed out after <num> s reading <path>"
    assert lookup["versions"] == ["1.0", "2.0"]
    assert lookup["examples"] == [late.trace_id, runs[1].trace_id, runs[0].trace_id]  # newest first
    assert lookup["first_seen"].startswith("2025-03-01T12:00:00") and lookup["last_seen"].startswith("2025-03-01T12:05:00")
    assert sum(p["count"] for p in lookup["trend"]) == 3

    # The last error wins: the run with an earlier tool error is clustered by its final LLM error.
    llm = clusters[("llm_unavailable", LLM_SIGNATURE)]
    assert llm["count"] == 2 and llm["span_kind"] == "llm" and llm["tool"] is None
    assert set(llm["examples"]) == {runs[2].trace_id, runs[3].trace_id}

    no_error = clusters[("max_steps", "max_steps")]
    assert no_error["count"] == 1 and no_error["span_kind"] is None and no_error["error_type"] is None

    foreign_cluster = next(c for c in body["clusters"] if c["examples"] == [foreign])
    assert foreign_cluster["stop_reason"] == "tool_error_exhausted" and foreign_cluster["tool"] == "db_query"


@pytest.mark.parametrize("backend", BACKENDS)
def test_failure_signature_is_on_the_run_and_filters_apply(server, loaded):
    runs, late, _ = loaded
    run = server.get(f"/api/traces/{late.trace_id}").json()["run"]
    assert run["failure_signature"] == LOOKUP_SIGNATURE
    ok_run = server.get("/api/runs", ok="true", limit=1).json()["runs"][0]
    assert ok_run["failure_signature"] is None

    only_v2 = server.get("/api/failures", version="2.0").json()
    assert only_v2["total_failed"] == 1 and only_v2["clusters"][0]["examples"] == [late.trace_id]
    nobody = server.get("/api/failures", agent="nobody").json()
    assert (nobody["total_failed"], nobody["clusters"]) == (0, [])
    assert server.get("/api/failures", bogus="1").status_code == 422
