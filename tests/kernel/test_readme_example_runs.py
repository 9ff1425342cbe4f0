'''The README's "Instrumenting your own agent in ten lines" example really runs: executed as a
separate Python process (as a user would paste it), its spans reach a real steplens ingest server
on 127.0.0.1 and the run can be read back through the query API. If the public API the README
shows (`kernel.Agent`, `@tool`, `ScriptedLLM`, `tracer.setup`) changes, this test fails first.

EXAMPLE is read from README.md; only the endpoint is pointed at the test's server.'''

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parents[2]
README_ENDPOINT = "http://127.0.0.1:4318"

def _readme_example() -> str:
    """The first python block of the README's ten-lines section, so the test runs what users read."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Instrumenting your own agent in ten lines", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


EXAMPLE = _readme_example()


def test_readme_example_runs_and_its_trace_reaches_the_server(ingest_server) -> None:  # noqa: F811
    assert README_ENDPOINT in EXAMPLE
    code = EXAMPLE.replace(README_ENDPOINT, ingest_server.http_url)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    ok, stop_reason, trace_id = out.stdout.split()
    assert (ok, stop_reason) == ("True", "finish") and len(trace_id) == 32

    ingest_server.store.wait_loaded(10)
    with httpx.Client(base_url=ingest_server.http_url, timeout=10) as client:
        deadline = time.monotonic() + 10
        while (resp := client.get(f"/api/traces/{trace_id}")).status_code == 404 and time.monotonic() < deadline:
            time.sleep(0.1)
        trace = resp.raise_for_status().json()
    run = trace["run"]
    assert (run["agent"], run["version"], run["ok"], run["stop_reason"], run["steps"]) == (
        "weather", "1.0", True, "finish", 2)
    assert run["tool_calls"] == 1 and run["tool_errors"] == 0 and run["llm_calls"] == 2
    names = sorted(s["name"] for s in trace["spans"])
    assert names == sorted(["invoke_agent weather", "step 1", "step 2", "budget_check", "budget_check",
                            "chat scripted", "chat scripted", "execute_tool get_weather", "truncate_observation"])
    tool = next(s for s in trace["spans"] if s["name"] == "execute_tool get_weather")
    assert tool["tool_name"] == "get_weather" and tool["status"] != "ERROR"
