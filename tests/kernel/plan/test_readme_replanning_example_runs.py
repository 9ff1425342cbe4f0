"""The README's "Plan-and-execute: replanning gates" example really runs: as a separate Python
process, its spans reach a real steplens ingest server on 127.0.0.1, and the stored trace has the
refused replan span with its verdict, reason and guard event, and the run's hand-off.

EXAMPLE is read from README.md; only the endpoint is pointed at the test's server."""

from __future__ import annotations

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tests.support.readme import fetch_trace, python_blocks, run_example
from tracer import conventions as c

EXAMPLE = python_blocks("Plan-and-execute: replanning gates")[0]


def test_readme_replanning_example_refuses_the_literal_variant(ingest_server) -> None:  # noqa: F811
    out = run_example(EXAMPLE, ingest_server.http_url)
    stop, verdict, handoff, trace_id = out.stdout.split()
    assert (stop, verdict, handoff) == ("replan_exhausted", "oscillation", "replan_breaker"), "what the README says"

    ingest_server.store.wait_loaded(10)
    trace = fetch_trace(ingest_server.http_url, trace_id)
    [replan] = [s for s in trace["spans"] if s["name"] == "replan orders"]
    a = replan["attributes"]
    assert a[c.REPLAN_VERDICT] == "oscillation"
    assert "only literal arguments changed" in a[c.REPLAN_REFUSAL]
    assert a[c.REPLAN_ROUTE_RULE] == "patch" and a[c.REPLAN_KEPT] == [] and a[c.REPLAN_DROPPED] == ["E1"]
    assert any("get_orders" in lesson for lesson in a[c.REPLAN_LESSONS])
    [run] = [s for s in trace["spans"] if s["name"] == "invoke_agent orders"]
    assert run["attributes"][c.RUN_HANDOFF_REASON] == "replan_breaker"
