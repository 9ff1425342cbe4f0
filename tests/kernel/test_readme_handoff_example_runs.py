"""The README's "Hand-off to a human and budget advice" snippet really runs: executed as a separate
Python process, its hook prints the hand-off, the run ends with stop reason `handoff`, and the run
row, the overview's hand-off table and the budget advice read back from a real steplens server say
so. EXAMPLE is read from README.md; only the endpoint is pointed at the test's server."""

from __future__ import annotations

import httpx

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tests.support.readme import python_blocks, run_example


def test_readme_handoff_example_runs_and_the_server_counts_the_handoff(ingest_server) -> None:  # noqa: F811
    out = run_example(python_blocks("Hand-off to a human and budget advice")[0], ingest_server.http_url)
    ticket, last = out.stdout.strip().splitlines()
    assert ticket == "ticket for support-tier-2 - escalation - asks for a refund manager"
    stop_reason, trace_id = last.split()
    assert stop_reason == "handoff" and len(trace_id) == 32

    assert ingest_server.store.wait_loaded(30)
    with httpx.Client(base_url=ingest_server.http_url, timeout=10) as client:
        run = client.get(f"/api/traces/{trace_id}").raise_for_status().json()["run"]
        overview = client.get("/api/overview", params={"agent": "desk"}).raise_for_status().json()
        advice = client.get("/api/budget-advice", params={"agent": "desk", "max_steps": 8}).raise_for_status().json()
    assert (run["stop_reason"], run["handoff_reason"], run["handoff_target"]) == ("handoff", "escalation",
                                                                               "support-tier-2")
    assert overview["handoffs"] == [{"agent": "desk", "version": "1.0", "runs": 1, "handoff_runs": 1,
                                     "handoff_rate": 1.0, "reasons": {"escalation": 1}}]
    [desk] = advice["agents"]
    steps = next(x for x in desk["limits"] if x["limit"] == "max_steps")
    # the kernel's default Budget records max_steps on the run span: it wins over the parameter
    assert steps["current_source"] == "recorded" and steps["p95"] == 1 and steps["suggested"] == 2
    assert steps["would_cut"] == 0 and steps["stopped_by"] == 0
