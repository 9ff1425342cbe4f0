"""The README's "Hand-off to a human and budget advice" snippet really runs: executed as a separate
Python process, its hook prints the hand-off, the run ends with stop reason `handoff`, and the run
row, the overview's hand-off table and the budget advice read back from a real steplens server say
so. EXAMPLE is read from README.md; only the endpoint is pointed at the test's server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parents[2]
README_ENDPOINT = "http://127.0.0.1:4318"


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Hand-off to a human and budget advice", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_readme_handoff_example_runs_and_the_server_counts_the_handoff(ingest_server) -> None:  # noqa: F811
    example = _readme_example()
    assert README_ENDPOINT in example
    code = example.replace(README_ENDPOINT, ingest_server.http_url)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    ticket, last = out.stdout.strip().splitlines()
    assert ticket == "ticket for support-tier-2 - escalation - asks for a refund manager"
    stop_reason, trace_id = last.split()
    assert stop_reason == "handoff" and len(trace_id) == 32

    assert ingest_server.store.wait_loaded(30)
    with httpx.Client(base_url=ingest_server.http_url, timeout=10) as client:
        run = client.get(f"/api/traces/{trace_id}").raise_for_status().json()["run"]
        overview = client.get("/api/overview", params={"agent": "desk"}).raise_for_status().json()
        advice = client.get("/api/budget-advice", params={"agent": "desk", "max_steps": 8}).raise_for_status().json()
    assert (run["stop_reason"], run["handoff_reason"], run["handoff_target"]) == ("handoff", "escalation",
                                                                               "support-tier-2")
    assert overview["handoffs"] == [{"agent": "desk", "version": "1.0", "runs": 1, "handoff_runs": 1,
                                     "handoff_rate": 1.0, "reasons": {"escalation": 1}}]
    [desk] = advice["agents"]
    steps = next(x for x in desk["limits"] if x["limit"] == "max_steps")
    # the kernel's default Budget records max_steps on the run span: it wins over the parameter
    assert steps["current_source"] == "recorded" and steps["p95"] == 1 and steps["suggested"] == 2
    assert steps["would_cut"] == 0 and steps["stopped_by"] == 0
