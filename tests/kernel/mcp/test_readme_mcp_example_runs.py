"""The README's "Tools from MCP servers" snippets really run: the server block is written to
`calc_server.py` in a scratch directory, the agent block runs there as a separate Python process
(as a user would paste it), the kernel starts the server over stdio, and the run's trace reaches a
real steplens ingest server on 127.0.0.1 with the tool span naming the MCP server."""

from __future__ import annotations

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tests.support.readme import README_ENDPOINT, ROOT, fetch_trace, python_blocks, run_example
from tracer import conventions as c


def test_readme_mcp_example_runs_and_its_tool_span_names_the_server(ingest_server, tmp_path) -> None:  # noqa: F811
    server_code, agent_code = python_blocks("Tools from MCP servers")
    assert README_ENDPOINT in agent_code and "calc_server.py" in agent_code
    (tmp_path / "calc_server.py").write_text(server_code, encoding="utf-8")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    out = run_example(agent_code, ingest_server.http_url, cwd=tmp_path, env=env)
    ok, answer, trace_id = out.stdout.split()
    assert (ok, answer) == ("True", "42") and len(trace_id) == 32

    ingest_server.store.wait_loaded(10)
    trace = fetch_trace(ingest_server.http_url, trace_id)
    run = trace["run"]
    assert (run["agent"], run["ok"], run["tool_calls"], run["tool_errors"]) == ("calculator", True, 1, 0)
    [tool] = [s for s in trace["spans"] if s["name"] == "execute_tool add"]
    assert tool["status"] != "ERROR"
    attrs = tool["attributes"]
    assert attrs[c.TOOL_MCP_SERVER] == "calc" and attrs[c.TOOL_MCP_TRANSPORT] == "stdio"
    assert attrs[c.NETWORK_TRANSPORT] == "pipe" and attrs[c.MCP_METHOD_NAME] == "tools/call"
    assert attrs[c.GEN_AI_TOOL_CALL_RESULT] == '{"result": 42}'
