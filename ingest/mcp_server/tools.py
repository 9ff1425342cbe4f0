"""The MCP server's tools: each one a bounded, paginated view of one steplens API endpoint.

Why these tools: they are the questions a coding agent asks when an agent misbehaves: which runs
failed (list_runs with a filter), what happened in one (get_trace), where a tool, an argument or a
message appears (search_spans, search_text), what fails most (failure_clusters), which tool is
slow, failing or expensive (tool_stats, cost_report), what changed (regressions), and anything else
(sql). All are read-only (`readOnlyHint`), and all read through the key the server was started with,
so no tool can reach another project's data.

Every answer fits `max_chars` (default 20,000) and carries `next_cursor` when there is more; pass it
back unchanged to continue. Long values are cut with the cut marked (ingest/mcp_server/paging.py).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from ingest.mcp_server.api import SteplensApi
from ingest.mcp_server.paging import (
    DEFAULT_FIELD_CHARS,
    DEFAULT_MAX_CHARS,
    Cursor,
    check_budget,
    clip,
    decode_cursor,
    encode_cursor,
    fit,
    page_answer,
    size,
)
from ingest.mcp_server.transcript import page_lines, run_header, transcript_lines
from tracer import conventions as c

TOOL_IS_REFUND = f'attributes["{c.GEN_AI_TOOL_NAME}"] = "refund"'
INSTRUCTIONS = f"""\
steplens stores traces of AI agent runs (one trace per run: agent > steps > LLM calls and tool calls).
Start with list_runs (e.g. filter 'ok = false', or {TOOL_IS_REFUND}), open one
with get_trace (a step-by-step transcript), find content with search_text, and use failure_clusters,
tool_stats, cost_report and regressions for the aggregate view; sql answers anything else over the
views runs, spans, tool_calls, scores. Filter expressions: column or attributes["key"] with = != > < >= <=,
contains, exists, in (...), and/or/not, search("words"). Times: ISO 8601 or relative (24h, 7d).
Every answer is bounded by max_chars; pass next_cursor back to read on."""

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)

Since = Annotated[str | None, Field(description="From: ISO 8601 or relative (24h, 7d). Default: no bound.")]
Until = Annotated[str | None, Field(description="Before: ISO 8601 or relative.")]
Agent = Annotated[str | None, Field(description="Only this agent.")]
Version = Annotated[str | None, Field(description="Only this agent version.")]
Mode = Annotated[str | None, Field(description="Run modes: live (default), shadow, eval, replay, a list, or all.")]
MaxChars = Annotated[int, Field(description="Most characters of the answer (1000..200000).")]
RunFilter = Annotated[str | None, Field(
    description=f"Filter expression, e.g. ok = false and steps > 5, or {TOOL_IS_REFUND}.")]
SpanFilter = Annotated[str, Field(
    description=f'Filter expression over spans, e.g. tool_name = "refund" and {TOOL_IS_REFUND}, or search("timeout").')]
CursorArg = Annotated[str | None, Field(description="next_cursor of the previous answer, to read on.")]

RUN_FIELDS = ("trace_id", "agent", "version", "mode", "ok", "stop_reason", "steps", "llm_calls", "tool_calls",
              "tool_errors", "input_tokens", "output_tokens", "cost_usd", "models", "start_time", "duration_ms",
              "failure_evidence", "sub_agents")
SPAN_FIELDS = ("trace_id", "span_id", "parent_span_id", "name", "operation", "status", "status_message", "start_time",
               "duration_ms", "agent_name", "model", "tool_name", "error_type", "input_tokens", "output_tokens",
               "cost_usd", "attributes")


def _pick(row: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return clip({k: row[k] for k in fields if row.get(k) not in (None, [], {})}, DEFAULT_FIELD_CHARS)


def _common(since: str | None, until: str | None, agent: str | None, version: str | None,
            mode: str | None) -> dict[str, Any]:
    return {"since": since, "until": until, "agent": agent, "version": version, "mode": mode}


def build_server(api: SteplensApi) -> MCPServer:
    """The MCPServer with every tool, reading through `api` (its URL and read key)."""
    server = MCPServer("steplens", version="0.1.0", instructions=INSTRUCTIONS, log_level="WARNING")

    def tool(fn: Callable[..., Awaitable[dict[str, Any]]]) -> Callable[..., Awaitable[dict[str, Any]]]:
        """Register `fn` as a read-only tool whose answer is sent as compact JSON (what max_chars counts)."""

        @functools.wraps(fn)
        async def compact(*args: Any, **kwargs: Any) -> Any:
            return as_result(await fn(*args, **kwargs))

        server.tool(annotations=READ_ONLY)(compact)
        return fn

    @tool
    async def list_runs(
        filter: RunFilter = None,
        since: Since = None, until: Until = None, agent: Agent = None, version: Version = None, mode: Mode = None,
        ok: Annotated[bool | None, Field(description="Only failed (false) or successful (true) runs.")] = None,
        stop_reason: Annotated[str | None, Field(description="e.g. max_steps, tool_error_exhausted.")] = None,
        user: str | None = None, conversation: str | None = None,
        sort: Literal["start_time", "duration_ms", "cost_usd", "steps", "input_tokens"] = "start_time",
        order: Literal["desc", "asc"] = "desc",
        limit: Annotated[int, Field(ge=1, le=200, description="Runs per API page.")] = 50,
        cursor: CursorArg = None, max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> dict[str, Any]:
        """Agent runs, newest first by default, with their outcome, steps, tokens and cost."""
        budget, at = check_budget(max_chars), decode_cursor(cursor)
        page = await api.get("/runs", {**_common(since, until, agent, version, mode), "filter": filter, "ok": ok,
                                       "stop_reason": stop_reason, "user": user, "conversation": conversation,
                                       "sort": sort, "order": order, "limit": limit, "cursor": at.api})
        runs = [_pick(r, RUN_FIELDS) for r in page["runs"]]
        return page_answer("runs", runs, at, page.get("next"), budget)

    @tool
    async def get_trace(
        trace_id: Annotated[str, Field(description="The run's trace id (32 hex characters).")],
        field_chars: Annotated[int, Field(ge=50, le=20_000, description="Longest value shown per field.")] = 400,
        cursor: CursorArg = None, max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> dict[str, Any]:
        """One run as a compact step-by-step transcript (task, thoughts, LLM calls, tool calls with arguments and
        results, errors, answer), indented by nesting, sized to max_chars and paged by line."""
        budget, at = check_budget(max_chars), decode_cursor(cursor)
        if not trace_id.strip():
            raise ToolError("trace_id is empty: take one from list_runs")
        trace = await api.get(f"/traces/{trace_id.strip()}")
        lines = transcript_lines(trace, field_chars)
        if at.offset > len(lines):
            raise ToolError(f"cursor is past the end of the transcript ({len(lines)} lines)")
        header = run_header(trace.get("run"), trace["trace_id"])
        text, shown = page_lines(header, lines, at.offset, budget - 300)
        end = at.offset + shown
        answer: dict[str, Any] = {"transcript": text, "lines": f"{at.offset + 1}-{end} of {len(lines)}",
                                  "next_cursor": encode_cursor(Cursor(None, end)) if end < len(lines) else None}
        if end < len(lines):
            answer["cut_by_budget"] = f"{len(lines) - end} more line(s); pass next_cursor to read on"
        return answer

    @tool
    async def search_spans(
        filter: SpanFilter,
        since: Since = None, until: Until = None,
        limit: Annotated[int, Field(ge=1, le=500, description="Spans per API page.")] = 50,
        cursor: CursorArg = None, max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> dict[str, Any]:
        """Spans (LLM calls, tool calls, steps...) matching a filter expression, newest first, with attributes."""
        budget, at = check_budget(max_chars), decode_cursor(cursor)
        page = await api.get("/spans", {"filter": filter, "since": since, "until": until, "limit": limit,
                                        "cursor": at.api})
        spans = [_pick(s, SPAN_FIELDS) for s in page["spans"]]
        extra = {"search_truncated": True} if page.get("search_truncated") else None
        return page_answer("spans", spans, at, page.get("next"), budget, extra)

    @tool
    async def search_text(
        query: Annotated[str, Field(description="Words to find in content: tasks, answers, thoughts, messages, "
                                                "tool arguments and results, errors.")],
        filter: Annotated[str | None, Field(description="Also a span filter expression.")] = None,
        since: Since = None, until: Until = None,
        limit: Annotated[int, Field(ge=1, le=100, description="Results wanted, best first.")] = 20,
        cursor: CursorArg = None, max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> dict[str, Any]:
        """Full-text search over span content, ranked, with the matching snippet (matches between [[ and ]])."""
        budget, at = check_budget(max_chars), decode_cursor(cursor)
        wanted = min(at.offset + limit, 100)
        answer = await api.get("/search", {"q": query, "filter": filter, "since": since, "until": until,
                                           "limit": wanted})
        results = [clip(_snippet(r), DEFAULT_FIELD_CHARS) for r in answer["results"]]
        page = results[at.offset:wanted]
        shown, n = fit(page, budget)
        end = at.offset + n
        more = end < len(results) or (len(results) == wanted and wanted < 100)
        return {"results": shown, "next_cursor": encode_cursor(Cursor(None, end)) if more else None}

    @tool
    async def failure_clusters(
        since: Since = None, until: Until = None, agent: Agent = None, version: Version = None, mode: Mode = None,
        limit: Annotated[int, Field(ge=1, le=500, description="Largest clusters wanted.")] = 50,
        cursor: CursorArg = None, max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> dict[str, Any]:
        """Failed runs grouped by stop reason and failure signature (the masked last error), largest first, with
        example traces."""
        budget, at = check_budget(max_chars), decode_cursor(cursor)
        answer = await api.get("/failures", {**_common(since, until, agent, version, mode), "limit": limit})
        clusters = [clip(_no_trend(c), DEFAULT_FIELD_CHARS) for c in answer["clusters"]]
        return page_answer("clusters", clusters, at, None, budget, {"total_failed": answer["total_failed"]})

    @tool
    async def tool_stats(
        since: Since = None, until: Until = None, agent: Agent = None, version: Version = None, mode: Mode = None,
        cursor: CursorArg = None, max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> dict[str, Any]:
        """Per tool: calls, errors by type, timeouts, denials, p50/p95 latency, truncation, cost."""
        budget, at = check_budget(max_chars), decode_cursor(cursor)
        answer = await api.get("/tools", _common(since, until, agent, version, mode))
        return page_answer("tools", [clip(t) for t in answer["tools"]], at, None, budget)

    @tool
    async def cost_report(
        group_by: Literal["model", "provider", "tool", "agent", "version", "project", "user", "conversation",
                          "day"] = "tool",
        since: Since = None, until: Until = None, agent: Agent = None, version: Version = None, mode: Mode = None,
        cursor: CursorArg = None, max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> dict[str, Any]:
        """Cost attribution: runs, calls, tokens and USD per group (tool costs as direct + decision + carry)."""
        budget, at = check_budget(max_chars), decode_cursor(cursor)
        answer = await api.get("/cost", {**_common(since, until, agent, version, mode), "group_by": group_by})
        return page_answer("rows", [clip(r) for r in answer["rows"]], at, None, budget,
                           {"group_by": answer["group_by"], "total_cost_usd": answer["total_cost_usd"]})

    @tool
    async def regressions(
        comparison: Annotated[Literal["window", "release", "drift", "cohort"], Field(
            description="window: the last `window` vs the `baseline` before it; release: newest version vs the "
                        "previous; drift: CUSUM over buckets; cohort: a gray release's candidate vs its stable "
                        "cohort over the same since..until.")] = "window",
        window: str = "24h", baseline: str = "7d", agent: Agent = None, mode: Mode = None,
        baseline_version: str | None = None, current_version: str | None = None,
        release: Annotated[str | None, Field(
            description="cohort: the gray release to compare (default every release in range).")] = None,
        since: Since = None, until: Until = None,
        metrics: Annotated[str | None, Field(description="Comma-separated metric keys (default all).")] = None,
        cursor: CursorArg = None, max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> dict[str, Any]:
        """What changed: metrics (steps, failure rate, cost, tokens, latency...) flagged with their effect size and
        significance, with example traces."""
        budget, at = check_budget(max_chars), decode_cursor(cursor)
        answer = await api.get("/regressions", {
            "comparison": comparison, "window": window, "baseline": baseline, "agent": agent, "mode": mode,
            "baseline_version": baseline_version, "current_version": current_version, "metrics": metrics,
            "release": release, "since": since, "until": until})
        items = [clip(f) for f in answer.get("findings", [])] + [clip(_no_series(d)) for d in answer.get("drift", [])]
        items.sort(key=lambda item: not item.get("flagged"))  # flagged first, each group in the API's order
        return page_answer("findings", items, at, None, budget,
                           {"comparison": answer["comparison"], "flagged": answer["flagged"]})

    @tool
    async def sql(
        query: Annotated[str, Field(description="One read-only SELECT over the views runs, spans, tool_calls, scores.")],
        limit: Annotated[int, Field(ge=1, le=5000, description="Rows per answer page.")] = 200,
        cursor: CursorArg = None, max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> dict[str, Any]:
        """Run one SELECT on the server (checked there: other tables, writes, files and table functions are
        refused). Paging re-runs the query and skips the rows already returned: ORDER BY for a stable order."""
        budget, at = check_budget(max_chars), decode_cursor(cursor)
        answer = await api.post("/sql", {"sql": query, "format": "json", "limit": at.offset + limit + 1})
        if answer.get("error"):
            raise ToolError(f"the query failed while streaming: {answer['error']}")
        names = [col["name"] for col in answer["columns"]]
        rows = [clip(row) for row in answer["rows"]]
        page = rows[at.offset:at.offset + limit]
        shown, n = fit(page, budget - size(names))
        end = at.offset + n
        more = end < len(rows) or bool(answer.get("truncated") and answer.get("truncated_by") == "byte_limit")
        out: dict[str, Any] = {"columns": names, "rows": shown,
                               "next_cursor": encode_cursor(Cursor(None, end)) if more else None}
        if n < len(page):
            out["cut_by_budget"] = f"{len(page) - n} more row(s) of this page did not fit max_chars; pass next_cursor"
        return out

    return server


def as_result(answer: dict[str, Any]) -> CallToolResult:
    """The answer as structured content and as the same JSON in compact text (the SDK's default text
    is indented, a third longer than the budget counted)."""
    text = json.dumps(answer, ensure_ascii=False, separators=(",", ":"), default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=answer)


def _snippet(result: dict[str, Any]) -> dict[str, Any]:
    """A search result with its snippet segments joined, matches marked [[like this]]."""
    segments = result.get("snippet") or []
    text = "".join(f"[[{s.get('text', '')}]]" if s.get("match") else s.get("text", "") for s in segments)
    keep = ("trace_id", "span_id", "name", "operation", "agent_name", "tool_name", "status", "start_time", "field",
            "score")
    return {**{k: result[k] for k in keep if result.get(k) is not None}, "snippet": text}


def _no_trend(cluster: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cluster.items() if k != "trend"}


def _no_series(drift: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in drift.items() if k not in ("points", "series", "buckets")}
