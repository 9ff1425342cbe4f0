"""The README's "Routing models by purpose and compacting the context" example really runs: as a
separate Python process (as a user would paste it), its spans reach a real steplens ingest server
on 127.0.0.1, and the stored trace shows the compactions with their summaries routed by purpose.

EXAMPLE is read from README.md; only the endpoint is pointed at the test's server."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tracer import conventions as c

ROOT = Path(__file__).resolve().parents[2]
README_ENDPOINT = "http://127.0.0.1:4318"


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Routing models by purpose and compacting the context", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


EXAMPLE = _readme_example()


def test_readme_router_example_runs_and_its_compactions_reach_the_server(ingest_server) -> None:  # noqa: F811
    assert README_ENDPOINT in EXAMPLE
    code = EXAMPLE.replace(README_ENDPOINT, ingest_server.http_url)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    ok, step_calls, summary_calls, trace_id = out.stdout.split()
    assert (ok, step_calls, summary_calls) == ("True", "4", "2"), "what the README says it prints"

    ingest_server.store.wait_loaded(10)
    with httpx.Client(base_url=ingest_server.http_url, timeout=10) as client:
        deadline = time.monotonic() + 10
        while (resp := client.get(f"/api/traces/{trace_id}")).status_code == 404 and time.monotonic() < deadline:
            time.sleep(0.1)
        trace = resp.raise_for_status().json()
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
