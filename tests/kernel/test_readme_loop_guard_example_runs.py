"""The README's "Loop guard" snippet really runs: executed as a separate Python process, it prints
the refused identical repeat and the refused same-tool streak, and the run read back from a real
steplens server counts only the two dispatched calls, with each refusal a `steplens.loop_guard`
event on its step span (no `execute_tool` span). The block is read from README.md; only the endpoint
is pointed at the test's server."""

from __future__ import annotations

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tests.support.readme import fetch_trace, python_blocks, run_example
from tracer import conventions as c


def test_readme_loop_guard_example_runs_and_refusals_are_guard_events_not_tool_calls(ingest_server) -> None:  # noqa: F811
    out = run_example(python_blocks("Loop guard")[0], ingest_server.http_url)
    printed, trace_id = out.stdout.strip().splitlines()
    assert printed == ("['tool', 'loop_guard', 'tool', 'loop_guard', 'finish'] "
                       "['repeated_call', 'same_tool_streak']")
    assert len(trace_id) == 32

    assert ingest_server.store.wait_loaded(30)
    trace = fetch_trace(ingest_server.http_url, trace_id)
    run = trace["run"]
    assert (run["agent"], run["ok"], run["steps"], run["tool_calls"], run["tool_errors"]) == ("crm", True, 5, 2, 0)
    names = [s["name"] for s in trace["spans"]]
    assert names.count("execute_tool find_customer") == 2
    steps = {s["name"]: s for s in trace["spans"] if s["name"] in ("step 2", "step 4")}
    for name, rule in (("step 2", c.GuardRule.REPEATED_CALL), ("step 4", c.GuardRule.SAME_TOOL_STREAK)):
        [event] = steps[name]["events"]
        assert event["name"] == c.EVENT_LOOP_GUARD and event["attributes"][c.GUARD_RULE] == rule.value
        assert event["attributes"][c.GEN_AI_TOOL_NAME] == "find_customer"
        assert event["attributes"][c.GUARD_SEVERITY] == "soft"
