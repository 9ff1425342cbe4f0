"""The demo never exercised the kernel's MCP tools, long-term memory or model-called hand-offs, so
`make run` showed none of them in the dashboards. A small demo run through real OTLP into a real
ingest server (the demo starts its real MCP server process over stdio) must store: ops runs whose
`read_repo_file` calls are MCP tool spans naming the server, ticket runs that recall their user's
memories (written with the `remember` tool in that user's earlier conversations) and write new
ones, and ticket runs the model handed to a human with the escalation tool; and the same seed
must give the same runs whatever the concurrency, memory included."""

from __future__ import annotations

from collections import Counter, defaultdict

import httpx
import pytest

from kernel.examples.demo import run_demo, run_workload
from kernel.examples.demo_mcp import SERVER_NAME
from kernel.examples.demo_memory import STORE_NAME
from kernel.examples.ticket import REMEMBER_TOOL, TRANSFER_TOOL
from tracer import conventions as c

pytestmark = pytest.mark.timeout(300)

RUNS, SEED = 120, 4


def _get(base: str, path: str, **params: object) -> dict:
    return httpx.get(base + path, params=params, timeout=60).raise_for_status().json()


def _runs(base: str) -> list[dict]:
    runs, cursor = [], None
    while True:
        page = _get(base, "/api/runs", limit=1000, mode="all", **({"cursor": cursor} if cursor else {}))
        runs += page["runs"]
        if not (cursor := page["next"]):
            return runs


def test_demo_runs_store_mcp_tool_spans_memory_operations_and_model_called_handoffs(ingest_server) -> None:
    base = ingest_server.http_url
    summary = run_demo(base, RUNS, seed=SEED, concurrency=16, progress=False)
    assert summary.runs == RUNS and summary.export_complete, summary
    assert ingest_server.store.wait_loaded(60)
    runs = _runs(base)
    assert len(runs) == RUNS
    traces = {r["trace_id"]: _get(base, f"/api/traces/{r['trace_id']}") for r in runs if r["agent"] in ("ops", "ticket")}

    # MCP: every read of the repository went to the MCP server, and its span says which one
    ops = [r for r in runs if r["agent"] == "ops"]
    reads = [s for r in ops for s in traces[r["trace_id"]]["spans"] if s["name"] == "execute_tool read_repo_file"]
    assert len(reads) >= len(ops) // 2, "most ops runs read the config named by the logs"
    for span in reads:
        attrs = span["attributes"]
        assert attrs[c.TOOL_MCP_SERVER] == SERVER_NAME and attrs[c.TOOL_MCP_TRANSPORT] == "stdio", attrs
        assert attrs[c.MCP_METHOD_NAME] == c.MCP_METHOD_TOOLS_CALL

    # Memory: every ticket run recalls (a memory operation), some write, and later conversations of
    # a user get what that user's earlier ones wrote
    ticket = sorted((r for r in runs if r["agent"] == "ticket"), key=lambda r: r["start_time"])
    searches = {r["trace_id"]: [s for s in traces[r["trace_id"]]["spans"] if s["name"] == f"search_memory {STORE_NAME}"]
                for r in ticket}
    assert all(len(found) == 1 for found in searches.values()), "one recall per ticket run"
    writes = [(r, s) for r in ticket for s in traces[r["trace_id"]]["spans"] if s["name"] == f"upsert_memory {STORE_NAME}"]
    assert writes and all(s["operation"] == c.OperationClass.MEMORY for _, s in writes)
    assert all(any(x["name"] == f"execute_tool {REMEMBER_TOOL}" for x in traces[r["trace_id"]]["spans"])
               for r, _ in writes)
    recalled = [r for r in ticket if searches[r["trace_id"]][0]["attributes"][c.GEN_AI_MEMORY_SEARCH_RESULT_COUNT] > 0]
    assert recalled, "some users come back and get their memories"
    first_write: dict[str, str] = {}
    for r, _ in writes:
        scope = f"ticket@{r['version']}/{r['user_id']}"
        first_write[scope] = min(first_write.get(scope, r["start_time"]), r["start_time"])
    for r in recalled:
        scope = searches[r["trace_id"]][0]["attributes"][c.GEN_AI_MEMORY_SCOPE]
        assert scope == f"ticket@{r['version']}/{r['user_id']}"
        assert scope in first_write and first_write[scope] < r["start_time"], "recalled what an earlier run wrote"

    # Hand-offs: legal threats transferred by the model (reason escalation), next to stop-reason ones
    handed = [r for r in runs if r["stop_reason"] == "handoff"]
    assert handed and all(r["agent"] == "ticket" for r in handed)
    assert {(r["handoff_reason"], r["handoff_target"]) for r in handed} == {("escalation", "tier2")}
    for r in handed:
        steps = [s for s in traces[r["trace_id"]]["spans"] if s["name"].startswith("step ")]
        assert steps[-1]["attributes"][c.STEP_ACTION] == TRANSFER_TOOL
    overview = _get(base, "/api/overview", agent="ticket")
    reasons = Counter()
    for row in overview["handoffs"]:
        reasons.update(row["reasons"])
    assert reasons["escalation"] == len(handed)


async def test_the_same_seed_gives_the_same_runs_whatever_the_concurrency_memory_included() -> None:
    one = await run_workload(60, seed=SEED, concurrency=1)
    many = await run_workload(60, seed=SEED, concurrency=24)

    def shape(summary) -> dict:
        return {k: (g.runs, g.ok, g.steps, g.input_tokens, g.output_tokens, dict(g.stop_reasons))
                for k, g in summary.groups.items()}

    assert shape(one) == shape(many)
    per_agent = defaultdict(int)
    for (agent, _), g in one.groups.items():
        per_agent[agent] += g.stop_reasons.get("handoff", 0)
    assert per_agent["ticket"] > 0
