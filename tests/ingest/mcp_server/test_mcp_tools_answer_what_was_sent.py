"""Every `steplens mcp` tool, called with the MCP SDK's client, answers what the steplens server stored
for what was sent, and every answer stays within its `max_chars` and pages to the end by cursor.

The failure this covers: a coding agent had no way into steplens but the dashboards; and a tool that
dumps a 10,000-span trace or a 100,000-row query fills the agent's context. Here each tool's answer
is checked against the runs the real OpenTelemetry SDK sent, and the paged answers are checked to
add up to the whole, with nothing repeated or skipped.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from mcp import Client

from tests.ingest.api.otlp_runs import Emitter
from tests.ingest.export.seeded import ORDER_RESULT, Seeded, post_otlp, seed
from tests.ingest.mcp_server.conftest import McpHttp, answer, text_of, wait_indexed

TOOLS = {"list_runs", "get_trace", "search_spans", "search_text", "failure_clusters", "tool_stats", "cost_report",
         "regressions", "sql"}


@pytest.fixture
def world(start_ingest_server: Callable[..., Any], start_mcp: Callable[..., McpHttp]) -> dict[str, Any]:
    srv = start_ingest_server(grpc_port=0)
    sent = seed(srv.http_url, srv.store, plain_runs=12)
    wide = Emitter()
    wide_trace = wide.wide_trace(150)
    extra = Seeded()
    post_otlp(srv.http_url, wide, None, extra)
    assert srv.store.wait_loaded(30)
    wait_indexed(srv.http_url)
    return {"srv": srv, "sent": sent, "wide": wide_trace, "mcp": start_mcp(srv.http_url)}


def _pages(mcp: McpHttp, tool: str, key: str, **arguments: Any) -> list[dict[str, Any]]:
    pages, cursor = [], None
    for _ in range(200):
        result = mcp.call(tool, **arguments, **({"cursor": cursor} if cursor else {}))
        assert len(text_of(result)) <= arguments.get("max_chars", 20_000)
        pages.append(answer(result))
        cursor = pages[-1]["next_cursor"]
        if cursor is None:
            return pages
    raise AssertionError(f"{tool} never reached its last page")


def test_mcp_tools_answer_what_was_sent(world: dict[str, Any]) -> None:
    mcp, sent, base = world["mcp"], world["sent"], world["srv"].http_url

    async def listed() -> set[str]:
        async with Client(mcp.url) as client:
            tools = (await client.list_tools()).tools
            assert all(t.annotations and t.annotations.read_only_hint for t in tools)
            return {t.name for t in tools}

    assert asyncio.run(listed()) == TOOLS

    runs = answer(mcp.call("list_runs"))["runs"]
    assert {r["trace_id"] for r in runs} == sent.trace_ids | {world["wide"]}
    plain = {r.trace_id: r for r in sent.plain}
    for row in runs:
        if row["trace_id"] in plain:
            spec = plain[row["trace_id"]]
            assert (row["agent"], row["steps"], row["tool_errors"]) == (spec.agent, spec.steps, spec.failing_tools)
    failed = answer(mcp.call("list_runs", filter="ok = false"))["runs"]
    assert [r["trace_id"] for r in failed] == [sent.content[1].trace_id]
    big = answer(mcp.call("list_runs", filter='tool_name = "refund" and attributes["refund.amount"] > 500'))
    assert [r["trace_id"] for r in big["runs"]] == [sent.content[0].trace_id]

    transcript = answer(mcp.call("get_trace", trace_id=sent.content[0].trace_id))
    text = transcript["transcript"]
    assert transcript["next_cursor"] is None
    assert "refund order 1234 for the customer" in text and "refunded 750 EUR" in text
    assert 'tool refund({"amount": 750, "currency": "EUR"})' in text and "-> refund accepted" in text
    assert text.index("lookup_order") < text.index("tool refund(")  # steps in order
    assert "score helpfulness=0.8 (api): good" in text  # how the run was rated, before its spans
    assert text.index("score helpfulness") < text.index("\nagent invoke_agent refund_agent")
    failing = answer(mcp.call("get_trace", trace_id=sent.content[1].trace_id))["transcript"]
    assert "ok=False" in failing and "ERROR" in failing and "payment gateway timeout after 30 s" in failing

    spans = answer(mcp.call("search_spans", filter='tool_name = "refund"'))["spans"]
    assert {(s["trace_id"], s["span_id"]) for s in spans} == {
        (r.trace_id, r.span_ids["refund"]) for r in sent.content}
    hits = answer(mcp.call("search_text", query="gateway timeout"))["results"]
    assert hits and hits[0]["trace_id"] == sent.content[1].trace_id and "[[" in hits[0]["snippet"]

    clusters = answer(mcp.call("failure_clusters"))
    assert clusters["total_failed"] == 1
    assert clusters["clusters"][0]["examples"] == [sent.content[1].trace_id]
    tools = {t["tool"]: t for t in answer(mcp.call("tool_stats"))["tools"]}
    assert tools["refund"]["calls"] == 2 and tools["refund"]["errors"] == 1
    assert tools["lookup"]["calls"] == sum(r.steps for r in sent.plain)
    assert tools["lookup"]["errors"] == sum(r.failing_tools for r in sent.plain)
    cost = answer(mcp.call("cost_report", group_by="agent"))
    assert cost["total_cost_usd"] == pytest.approx(sum(r.cost_usd for r in sent.plain))
    regressions = answer(mcp.call("regressions", comparison="release"))
    api = httpx.get(base + "/api/regressions", params={"comparison": "release"}, timeout=30).json()
    assert regressions["flagged"] == api["flagged"] and len(regressions["findings"]) == len(api["findings"])

    rows = answer(mcp.call("sql", query="SELECT agent, count(*) AS n FROM runs GROUP BY agent ORDER BY agent"))
    assert rows["columns"] == ["agent", "n"]
    assert rows["rows"] == [["refund_agent", len(sent.trace_ids)], ["wide_agent", 1]]


def test_every_answer_fits_max_chars_and_pages_to_the_end(world: dict[str, Any]) -> None:
    mcp, sent = world["mcp"], world["sent"]

    pages = _pages(mcp, "list_runs", "runs", limit=200, max_chars=1000)
    ids = [r["trace_id"] for p in pages for r in p["runs"]]
    assert len(pages) > 3 and len(ids) == len(set(ids)) and set(ids) == sent.trace_ids | {world["wide"]}
    pages = _pages(mcp, "list_runs", "runs", limit=3)  # the API's own cursor, page after page
    assert [r["trace_id"] for p in pages for r in p["runs"]] == ids

    whole = answer(mcp.call("get_trace", trace_id=world["wide"], max_chars=200_000))
    assert whole["next_cursor"] is None and whole["lines"] == "1-301 of 301"
    pages = _pages(mcp, "get_trace", "transcript", trace_id=world["wide"], max_chars=1500)
    assert len(pages) > 5 and all("cut_by_budget" in p for p in pages[:-1])
    body = [line for p in pages for line in p["transcript"].splitlines()[1:]]
    assert body == whole["transcript"].splitlines()[1:]
    long_value = answer(mcp.call("get_trace", trace_id=sent.content[0].trace_id, field_chars=50))["transcript"]
    assert f"-> {ORDER_RESULT[:50]}…[+{len(ORDER_RESULT) - 50} chars]" in long_value  # cuts say how much

    all_spans = json.loads(text_of(mcp.call("sql", query="SELECT count(*) FROM spans")))["rows"][0][0]
    pages = _pages(mcp, "sql", "rows", query="SELECT trace_id, span_id FROM spans ORDER BY span_id", limit=40,
                   max_chars=1200)
    keys = [tuple(r) for p in pages for r in p["rows"]]
    assert len(keys) == len(set(keys)) == all_spans
    pages = _pages(mcp, "search_spans", "spans", filter='operation = "step"', limit=500, max_chars=3000)
    steps = [s["span_id"] for p in pages for s in p["spans"]]
    assert len(steps) == len(set(steps)) == 150 + sum(r.steps for r in sent.plain) + 3


def test_bad_input_is_a_clear_tool_error(world: dict[str, Any]) -> None:
    mcp = world["mcp"]
    for tool, arguments, words in (
        ("list_runs", {"filter": "steps >> 3"}, "steplens refused the request (400)"),
        ("search_spans", {"filter": 'attributes["x" = 1'}, "400"),
        ("get_trace", {"trace_id": "ab" * 16}, "not found (404)"),
        ("sql", {"query": "SELECT * FROM read_csv('/etc/passwd')"}, "SQL refused"),
        ("sql", {"query": "ATTACH 'x.db' AS x"}, "SQL refused"),
        ("list_runs", {"cursor": "not-a-cursor"}, "cursor is malformed"),
        ("list_runs", {"max_chars": 10}, "max_chars must be between"),
        ("list_runs", {"since": "yesterday"}, "since"),
    ):
        result = mcp.call(tool, **arguments)
        assert result.is_error, (tool, arguments, text_of(result))
        assert words in text_of(result), (tool, arguments, text_of(result))
