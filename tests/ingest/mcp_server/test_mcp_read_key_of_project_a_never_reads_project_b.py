"""`steplens mcp` with a read key of project A never answers anything of project B, through any tool;
with a refused key every tool is a clear error naming the key, not an empty answer.

The failure this covers: an MCP server that reads with more than its key may (the database, an
operator key), or that turns a 401 into "no runs", which a coding agent would report as the truth.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ingest.config import ApiKey
from tests.ingest.export.seeded import seed
from tests.ingest.mcp_server.conftest import McpHttp, answer, text_of, wait_indexed

SECRET = {n: f"{n}-secret-0123456789" for n in ("ingest_a", "read_a", "admin_a", "ingest_b", "admin_b", "operator")}
SCOPES = {"ingest_a": ("A", "ingest"), "read_a": ("A", "read"), "admin_a": ("A", "admin"),
          "ingest_b": ("B", "ingest"), "admin_b": ("B", "admin"), "operator": ("ops", "operator")}

# every tool, with arguments that would find project B's data if it leaked
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_runs", {}),
    ("list_runs", {"filter": 'agent = "agent_of_b"'}),
    ("search_spans", {"filter": 'operation = "tool"'}),
    ("search_text", {"query": "refund"}),
    ("failure_clusters", {}),
    ("tool_stats", {}),
    ("cost_report", {"group_by": "agent"}),
    ("cost_report", {"group_by": "project"}),
    ("regressions", {"comparison": "release"}),
    ("sql", {"query": "SELECT project, agent, trace_id FROM runs"}),
    ("sql", {"query": "SELECT project, trace_id, span_id, attributes FROM spans"}),
]


def test_mcp_read_key_of_project_a_never_reads_project_b(
    start_ingest_server: Callable[..., Any], start_mcp: Callable[..., McpHttp]
) -> None:
    keys = [ApiKey(key=SECRET[n], project=p, scopes=[s]) for n, (p, s) in SCOPES.items()]  # type: ignore[list-item]
    srv = start_ingest_server(grpc_port=0, api_keys=keys)
    a = seed(srv.http_url, srv.store, agent="agent_of_a", key=SECRET["ingest_a"], score_key=SECRET["admin_a"])
    b = seed(srv.http_url, srv.store, agent="agent_of_b", key=SECRET["ingest_b"], score_key=SECRET["admin_b"])
    wait_indexed(srv.http_url, SECRET["operator"])
    b_marks = ["agent_of_b", *b.trace_ids, *(span for _, span in b.span_ids)]

    mcp = start_mcp(srv.http_url, SECRET["read_a"])
    for tool, arguments in CALLS:
        result = mcp.call(tool, **arguments)
        text = text_of(result)
        assert not result.is_error, (tool, text)
        leaked = [m for m in b_marks if m in text]
        assert not leaked, f"{tool} {arguments} answered project B's {leaked[:3]}"
    assert {r["trace_id"] for r in answer(mcp.call("list_runs"))["runs"]} == a.trace_ids
    rows = answer(mcp.call("sql", query="SELECT DISTINCT project FROM spans"))["rows"]
    assert rows == [["A"]]
    other = mcp.call("get_trace", trace_id=sorted(b.trace_ids)[0])
    assert other.is_error and "not found (404)" in text_of(other)
    assert "agent_of_a" in answer(mcp.call("get_trace", trace_id=a.content[0].trace_id))["transcript"]

    # the operator sees both: the same calls do find B when the key may read it
    everyone = start_mcp(srv.http_url, SECRET["operator"])
    assert {r["trace_id"] for r in answer(everyone.call("list_runs", limit=200))["runs"]} == a.trace_ids | b.trace_ids

    for bad_key in ("not-a-key-0123456789", None):
        refused = start_mcp(srv.http_url, bad_key)
        for tool, arguments in [*CALLS, ("get_trace", {"trace_id": a.content[0].trace_id})]:
            result = refused.call(tool, **arguments)
            assert result.is_error, (tool, text_of(result))
            assert "steplens refused the API key (401" in text_of(result) and "STEPLENS_API_KEY" in text_of(result)
    ingest_only = start_mcp(srv.http_url, SECRET["ingest_a"]).call("list_runs")
    assert ingest_only.is_error and "needs the read scope" in text_of(ingest_only)
    assert json.dumps(text_of(ingest_only)).count(SECRET["ingest_a"]) == 0  # the key never echoes back
