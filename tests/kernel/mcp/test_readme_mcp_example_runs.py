"""The README's "Tools from MCP servers" snippets really run: the server block is written to
`calc_server.py` in a scratch directory, the agent block runs there as a separate Python process
(as a user would paste it), the kernel starts the server over stdio, and the run's trace reaches a
real steplens ingest server on 127.0.0.1 with the tool span naming the MCP server."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tracer import conventions as c

ROOT = Path(__file__).resolve().parents[3]
README_ENDPOINT = "http://127.0.0.1:4318"


def _blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Tools from MCP servers", 1)[1].split("\n## ", 1)[0]
    return [part.split("```", 1)[0] for part in section.split("```python\n")[1:]]


def test_readme_mcp_example_runs_and_its_tool_span_names_the_server(ingest_server, tmp_path) -> None:  # noqa: F811
    server_code, agent_code = _blocks()
    assert README_ENDPOINT in agent_code and "calc_server.py" in agent_code
    (tmp_path / "calc_server.py").write_text(server_code, encoding="utf-8")
    code = agent_code.replace(README_ENDPOINT, ingest_server.http_url)
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    ok, answer, trace_id = out.stdout.split()
    assert (ok, answer) == ("True", "42") and len(trace_id) == 32

    ingest_server.store.wait_loaded(10)
    with httpx.Client(base_url=ingest_server.http_url, timeout=10) as client:
        deadline = time.monotonic() + 10
        while (resp := client.get(f"/api/traces/{trace_id}")).status_code == 404 and time.monotonic() < deadline:
            time.sleep(0.1)
        trace = resp.raise_for_status().json()
    run = trace["run"]
    assert (run["agent"], run["ok"], run["tool_calls"], run["tool_errors"]) == ("calculator", True, 1, 0)
    [tool] = [s for s in trace["spans"] if s["name"] == "execute_tool add"]
    assert tool["status"] != "ERROR"
    attrs = tool["attributes"]
    assert attrs[c.TOOL_MCP_SERVER] == "calc" and attrs[c.TOOL_MCP_TRANSPORT] == "stdio"
    assert attrs[c.NETWORK_TRANSPORT] == "pipe" and attrs[c.MCP_METHOD_NAME] == "tools/call"
    assert attrs[c.GEN_AI_TOOL_CALL_RESULT] == '{"result": 42}'
