'''The README's "Instrumenting your own agent in ten lines" example really runs: executed as a
separate Python process (as a user would paste it), its spans reach a real steplens ingest server
on 127.0.0.1 and the run can be read back through the query API. If the public API the README
shows (`kernel.Agent`, `@tool`, `ScriptedLLM`, `tracer.setup`) changes, this test fails first.

EXAMPLE is read from README.md; only the endpoint is pointed at the test's server.'''

from __future__ import annotations

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tests.support.readme import fetch_trace, python_blocks, run_example

EXAMPLE = python_blocks("Instrumenting your own agent in ten lines")[0]


def test_readme_example_runs_and_its_trace_reaches_the_server(ingest_server) -> None:  # noqa: F811
    out = run_example(EXAMPLE, ingest_server.http_url)
    ok, stop_reason, trace_id = out.stdout.split()
    assert (ok, stop_reason) == ("True", "finish") and len(trace_id) == 32

    ingest_server.store.wait_loaded(10)
    trace = fetch_trace(ingest_server.http_url, trace_id)
    run = trace["run"]
    assert (run["agent"], run["version"], run["ok"], run["stop_reason"], run["steps"]) == (
        "weather", "1.0", True, "finish", 2)
    assert run["tool_calls"] == 1 and run["tool_errors"] == 0 and run["llm_calls"] == 2
    names = sorted(s["name"] for s in trace["spans"])
    assert names == sorted(["invoke_agent weather", "step 1", "step 2", "budget_check", "budget_check",
                            "chat scripted", "chat scripted", "execute_tool get_weather", "truncate_observation"])
    tool = next(s for s in trace["spans"] if s["name"] == "execute_tool get_weather")
    assert tool["tool_name"] == "get_weather" and tool["status"] != "ERROR"
