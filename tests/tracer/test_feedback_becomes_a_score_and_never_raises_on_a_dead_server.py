"""`tracer.feedback` sends an end user's judgment of a run to a real server (OTLP/HTTP logs, the
SDK's exporter), where it becomes a score (source `client`, author the user, agent joined from the
run); a changed judgment replaces the earlier one; against a dead or hung server, and with bad
arguments, it returns at once with the failure in its result and never raises into the app.

The failure this covers: a feedback button whose handler throws (or hangs a request) when the
observability backend is down, or every click stored as another score."""

from __future__ import annotations

import time
from typing import Any

import httpx

import tracer
from ingest.config import ApiKey
from tests.ingest.api.otlp_runs import RunSpec
from tests.ingest.conftest import start_ingest_server  # noqa: F401 - the real server fixture
from tests.ingest.scores.conftest import get_scores, send_runs
from tests.tracer.otlp_sink import closed_port, silent_port


def test_feedback_is_a_score_on_its_run(start_ingest_server: Any) -> None:  # noqa: F811
    srv = start_ingest_server(grpc_port=0)
    run = send_runs(srv.http_url, [RunSpec(agent="shop", version="3")])[0]
    sent = tracer.feedback(run.trace_id, "helpful", True, comment="solved it", user="u-42", endpoint=srv.http_url)
    assert sent.error is None and sent.wait(10), sent.error
    rating = tracer.feedback(run.trace_id, "stars", 4, user="u-42", endpoint=srv.http_url + "/v1/logs")
    label = tracer.feedback(run.trace_id, "tone", "friendly", user="u-42", endpoint=srv.http_url)
    assert rating.wait(10) and label.wait(10)
    assert srv.store.wait_loaded(10)
    scores = {s["name"]: s for s in get_scores(srv.http_url, trace_id=run.trace_id)}
    helpful = scores["helpful"]
    assert (helpful["value"], helpful["data_type"], helpful["source"]) == (True, "boolean", "client")
    assert (helpful["author"], helpful["comment"], helpful["agent"]) == ("u-42", "solved it", "shop")
    assert helpful["score_id"] == sent.score_id
    assert (scores["stars"]["value"], scores["stars"]["data_type"]) == (4.0, "numeric")
    assert (scores["tone"]["value"], scores["tone"]["data_type"]) == ("friendly", "categorical")

    # the user changes their mind: same id, newer time -> one score, the new value
    changed = tracer.feedback(run.trace_id, "helpful", False, user="u-42", endpoint=srv.http_url)
    assert changed.wait(10) and changed.score_id == sent.score_id
    assert srv.store.wait_loaded(10)
    helpful_now = [s for s in get_scores(srv.http_url, trace_id=run.trace_id) if s["name"] == "helpful"]
    assert [s["value"] for s in helpful_now] == [False]
    # another user's judgment is another score
    assert tracer.feedback(run.trace_id, "helpful", True, user="u-7", endpoint=srv.http_url).wait(10)
    assert srv.store.wait_loaded(10)
    assert sorted(s["author"] for s in get_scores(srv.http_url, name="helpful")) == ["u-42", "u-7"]


def test_feedback_uses_the_tracing_setup_and_its_key(start_ingest_server: Any) -> None:  # noqa: F811
    srv = start_ingest_server(grpc_port=0, api_keys=[ApiKey(key="ingest-key-0123456789", project="shop",
                                                            scopes=["ingest", "read"])])
    key = {"x-api-key": "ingest-key-0123456789"}
    run = send_runs(srv.http_url, [RunSpec(agent="shop")], key="ingest-key-0123456789")[0]
    handle = tracer.setup(service_name="shop-web", endpoint=srv.http_url + "/v1/traces", headers=key)
    try:
        result = tracer.feedback(run.trace_id, "helpful", True, user="u-1")
        assert result.wait(10), result.error
    finally:
        handle.shutdown(timeout_s=2)
    assert srv.store.wait_loaded(10)
    got = get_scores(srv.http_url, key["x-api-key"], trace_id=run.trace_id)
    assert [(s["name"], s["project"], s["agent"]) for s in got] == [("helpful", "shop", "shop")]
    # without the key the server refuses, and feedback says so instead of raising
    refused = tracer.feedback(run.trace_id, "helpful", False, user="u-2", endpoint=srv.http_url, headers={})
    assert refused.wait(10) is False and refused.error


def test_dead_or_hung_server_and_bad_arguments_never_raise() -> None:
    trace_id = "1234567890abcdef1234567890abcdef"
    started = time.monotonic()
    dead = tracer.feedback(trace_id, "helpful", True, endpoint=f"http://127.0.0.1:{closed_port()}", timeout_s=2)
    with silent_port() as port:
        hung = tracer.feedback(trace_id, "helpful", True, endpoint=f"http://127.0.0.1:{port}", timeout_s=1)
        assert time.monotonic() - started < 0.5  # nothing waited on the network
        assert hung.wait(10) is False and hung.error
    assert dead.sent and dead.wait(15) is False and dead.error
    for args in (("not-a-trace-id", "helpful", True), (trace_id, "", True), (trace_id, "x", float("nan")),
                 (trace_id, "x", object()), (trace_id, "x", [1]), ("0" * 32, "x", 1)):
        bad = tracer.feedback(*args)  # type: ignore[arg-type]
        assert not bad.sent and bad.error and bad.wait(0.1) is False, args
    assert tracer.feedback(trace_id, "x", 1, span_id="zz").error == "span_id must be 16 hex characters"
    assert tracer.feedback(trace_id, "x", 1, comment=5).error == "comment must be text"  # type: ignore[arg-type]


def test_feedback_goes_through_the_query_api_too(start_ingest_server: Any) -> None:  # noqa: F811
    """The event is an ordinary OTLP log record: it is also on the trace's span-less logs."""
    srv = start_ingest_server(grpc_port=0)
    run = send_runs(srv.http_url, [RunSpec(agent="shop")])[0]
    assert tracer.feedback(run.trace_id, "helpful", True, endpoint=srv.http_url).wait(10)
    assert srv.store.wait_loaded(10)
    trace = httpx.get(f"{srv.http_url}/api/traces/{run.trace_id}").json()
    assert [e["name"] for e in trace["evaluations"]] == ["helpful"]
    assert trace["run"]["scores"] == {"helpful": True}
