"""The README's "Routing models by purpose and compacting the context" example really runs: as a
separate Python process (as a user would paste it), its spans reach a real steplens ingest server
on 127.0.0.1, and the stored trace shows the compactions with their summaries routed by purpose.

EXAMPLE is read from README.md; only the endpoint is pointed at the test's server."""

from __future__ import annotations

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tests.support.readme import fetch_trace, python_blocks, run_example
from tracer import conventions as c

EXAMPLE = python_blocks("Routing models by purpose and compacting the context")[0]


def test_readme_router_example_runs_and_its_compactions_reach_the_server(ingest_server) -> None:  # noqa: F811
    out = run_example(EXAMPLE, ingest_server.http_url)
    ok, step_calls, summary_calls, trace_id = out.stdout.split()
    assert (ok, step_calls, summary_calls) == ("True", "4", "2"), "what the README says it prints"

    ingest_server.store.wait_loaded(10)
    trace = fetch_trace(ingest_server.http_url, trace_id)
    spans = {s["span_id"]: s for s in trace["spans"]}
    compactions = [s for s in spans.values() if s["name"] == c.SPAN_COMPACT]
    assert len(compactions) == 2
    for compaction in compactions:
        a = compaction["attributes"]
        assert a[c.COMPACT_THRESHOLD_TOKENS] == 1000 and a[c.COMPACT_TOKENS_AFTER] < a[c.COMPACT_TOKENS_BEFORE]
        assert a[c.COMPACT_DROPPED[c.CompactedKind.OBSERVATION]] == 1 and a[c.COMPACT_SUMMARISED] == 1
        (summary,) = [spans[i] for i in compaction["children"]]
        assert summary["model"] == "small-model"
        assert summary["attributes"][c.LLM_PURPOSE] == "summary"
        assert summary["attributes"][c.LLM_ROUTE_RULE] == "cheap-summaries"
    steps = [s for s in spans.values() if s["name"] == "chat big-model"]
    assert len(steps) == 4
    assert {(s["attributes"][c.LLM_PURPOSE], s["attributes"][c.LLM_ROUTE_RULE]) for s in steps} == {("step", "default")}


def test_readme_resilient_router_example_routes_the_plan_then_falls_back(ingest_server) -> None:  # noqa: F811
    """The second snippet: a Router inside ResilientLLM gets the plan call's purpose (it used to see
    `step` and ask the default model); the stored chat spans name the routed model and rule per
    attempt and the fallback."""
    out = run_example(python_blocks("Routing models by purpose and compacting the context")[1], ingest_server.http_url)
    *printed, trace_id = out.stdout.split()
    assert " ".join(printed) == "True 4.5 [('strong-model', 1), ('strong-model', 2), ('backup-model', 1)]"

    ingest_server.store.wait_loaded(10)
    trace = fetch_trace(ingest_server.http_url, trace_id)
    chats = sorted((s for s in trace["spans"] if s["name"].startswith("chat ")), key=lambda s: s["start_time"])
    seen = [(s["name"], s["attributes"][c.LLM_PURPOSE], s["attributes"].get(c.LLM_ROUTE_RULE),
             s["attributes"].get(c.LLM_FALLBACK_FROM)) for s in chats]
    assert seen == [("chat strong-model", "plan", "planner", None), ("chat strong-model", "plan", "planner", None),
                    ("chat backup-model", "plan", None, "strong-model")]
    assert [s["status"] == "ERROR" or s["attributes"].get("error.type") is not None for s in chats] == [True, True, False]
