"""The README's "Long-term memory and big observations" snippet really runs: as a separate Python
process (as a user would paste it), in a scratch directory that receives its SQLite file; the second
run's prompt holds what the first remembered, and the first run's trace reaches a real steplens
ingest server with its memory spans and the saved-aside tool span."""

from __future__ import annotations

import time

import httpx

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tests.support.readme import ROOT, fetch_trace, python_blocks, run_example
from tracer import conventions as c


def test_readme_memory_example_runs_and_its_spans_reach_the_server(ingest_server, tmp_path) -> None:  # noqa: F811
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    out = run_example(python_blocks("Long-term memory and big observations")[0], ingest_server.http_url,
                      cwd=tmp_path, env=env)
    first_ok, second_ok, recalled, trace_id = out.stdout.split()
    assert (first_ok, second_ok, recalled) == ("True", "True", "True") and len(trace_id) == 32
    assert (tmp_path / "memories.sqlite").is_file()

    ingest_server.store.wait_loaded(10)
    trace = fetch_trace(ingest_server.http_url, trace_id)
    names = [s["name"] for s in trace["spans"]]
    assert names.count("search_memory memories") == 1 and names.count("upsert_memory memories") == 1
    assert "execute_tool remember" in names and "execute_tool read_observation" in names
    memory_ops = {s["operation"] for s in trace["spans"] if s["name"].endswith("_memory memories")}
    assert memory_ops == {c.OperationClass.MEMORY}  # ingest classes both as memory operations
    [export] = [s for s in trace["spans"] if s["name"] == "execute_tool export_orders"]
    attrs = export["attributes"]
    assert attrs[c.TOOL_RESULT_SAVED_ASIDE] is True and attrs[c.TOOL_RESULT_SIZE_CHARS] > 8000
    assert (trace["run"]["steps"], trace["run"]["tool_calls"], trace["run"]["tool_errors"]) == (4, 3, 0)

    # What was remembered is findable: the write's value is searchable content of its span.
    with httpx.Client(base_url=ingest_server.http_url, timeout=10) as client:
        deadline, fields = time.monotonic() + 10, set()
        while not fields and time.monotonic() < deadline:
            hits = client.get("/api/search", params={"q": "express", "since": "2000-01-01T00:00:00Z"}).json()
            fields = {h.get("field") for h in hits["results"] if h.get("name") == "upsert_memory memories"}
            time.sleep(0.1)
    assert fields == {c.GEN_AI_MEMORY_CONTENT}, hits
