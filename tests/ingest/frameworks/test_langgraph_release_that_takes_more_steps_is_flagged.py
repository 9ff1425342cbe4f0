"""A foreign framework's release is visible to regressions, alerts and failures: the captured LangGraph
agent traced by OpenInference (tests/fixtures/frameworks/langgraph_release_regression: release 1.0,
30 runs of 2 steps; release 2.0, 30 runs of 4 steps and 4 runs whose model call got HTTP 500) replayed
byte for byte into the full server with a release rule on steps for that agent.

Before runs of foreign clients had steps and stop reasons, every one of these runs had `steps: null`
and `ok: true`: the release comparison had nothing to compare, `steplens alerts check` passed, and
/api/failures was empty.

The bodies keep the timestamps of the day they were captured, so every query names the range the
runs span (taken from the stored runs) instead of relying on the default "recent" windows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.ingest.analytics.synthetic import wait_first_evaluation
from tests.ingest.api.harness import BACKENDS

CAPTURE = Path(__file__).resolve().parents[2] / "fixtures" / "frameworks" / "langgraph_release_regression"
STEPLENS = str(Path(sys.executable).with_name("steplens"))
AGENT = "weather_agent"
RULE = {"name": "weather steps per release", "kind": "release", "metric": "steps", "agent": AGENT,
        "severity": "critical"}  # fmt: skip


def _replay(url: str, manifest: dict[str, Any]) -> None:
    """Post every body as the OTLP exporter did (gzip protobuf to /v1/traces)."""
    with httpx.Client(base_url=url, timeout=60) as client:
        for body in manifest["bodies"]:
            headers = {"Content-Type": body["content_type"]}
            if body.get("content_encoding"):
                headers["Content-Encoding"] = body["content_encoding"]
            r = client.post(body["path"], content=(CAPTURE / body["file"]).read_bytes(), headers=headers)
            assert r.status_code == 200, (body["file"], r.status_code, r.text)


def _range(url: str, manifest: dict[str, Any]) -> dict[str, str]:
    """since/until around the stored runs' start times (the capture day, not today)."""
    starts = []
    for run in manifest["runs"]:
        r = httpx.get(f"{url}/api/traces/{run['trace_id']}", timeout=30)
        assert r.status_code == 200, (run["scenario"], r.text)
        starts.append(datetime.fromisoformat(r.json()["run"]["start_time"].replace("Z", "+00:00")))
    return {"since": (min(starts) - timedelta(minutes=1)).isoformat(),
            "until": (max(starts) + timedelta(minutes=1)).isoformat()}  # fmt: skip


def _alerts_check(url: str) -> subprocess.CompletedProcess[str]:
    """The real console script; wide columns so the firing table never wraps the rule's name."""
    env = {k: v for k, v in os.environ.items() if k != "STEPLENS_API_KEY"} | {"COLUMNS": "250"}
    return subprocess.run([STEPLENS, "alerts", "check", "--api", url], capture_output=True, text=True, env=env,
                          timeout=120)  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)  # the same verdicts on both stores
def test_langgraph_v2_taking_more_steps_is_flagged_alerted_and_its_failures_clustered(
    start_ingest_server: Callable[..., Any],
) -> None:
    manifest = json.loads((CAPTURE / "manifest.json").read_text())
    by_version: dict[str, list[dict[str, Any]]] = {}
    for run in manifest["runs"]:
        by_version.setdefault(run["version"], []).append(run)
    assert {v: len(runs) for v, runs in by_version.items()} == {"1.0": 30, "2.0": 34}, "the fixture changed"

    srv = start_ingest_server(alerts=[RULE], grpc_port=0)
    wait_first_evaluation(srv.http_url)  # the startup evaluation saw no runs: the check below sees them all
    quiet = _alerts_check(srv.http_url)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr

    _replay(srv.http_url, manifest)
    assert srv.store.wait_loaded(60), "bodies acknowledged but not loaded within 60 s"
    window = _range(srv.http_url, manifest)

    # The release comparison: 2.0 (the newest) against 1.0, steps up from 2 to ~3.6 per run.
    r = httpx.get(f"{srv.http_url}/api/regressions", timeout=60,
                  params={"comparison": "release", "agent": AGENT, **window})  # fmt: skip
    assert r.status_code == 200, r.text
    findings = {f["metric"]: f for f in r.json()["findings"] if f["agent"] == AGENT}
    steps = findings["steps"]
    assert steps["flagged"] and steps["verdict"] == "regression", steps
    assert (steps["baseline"]["label"], steps["current"]["label"]) == ("version 1.0", "version 2.0"), steps
    assert (steps["baseline"]["n"], steps["current"]["n"]) == (30, 34)
    assert steps["baseline"]["value"] == 2.0
    assert steps["current"]["value"] == (30 * 4 + 4 * 1) / 34
    assert findings["failure_rate"]["current"]["value"] == 4 / 34 and findings["failure_rate"]["baseline"]["value"] == 0

    # The real CLI evaluates the rule through the server: firing, exit 1, the rule and agent named.
    loud = _alerts_check(srv.http_url)
    assert loud.returncode == 1, loud.stdout + loud.stderr
    assert RULE["name"] in loud.stdout and AGENT in loud.stdout, loud.stdout
    rules = httpx.get(f"{srv.http_url}/api/alerts", timeout=30).json()["rules"]
    assert [(r["rule"]["name"], r["firing"], [(s["subject"], s["status"]) for s in r["states"]]) for r in rules] == [
        (RULE["name"], True, [(AGENT, "firing")])], rules
    events = httpx.get(f"{srv.http_url}/api/alerts/events", params={"rule": RULE["name"]}, timeout=30).json()["events"]
    firing = [e for e in events if e["kind"] == "firing"]
    assert len(firing) == 1 and firing[0]["evidence"], events
    # evidence: 2.0's worst runs (4 steps) first, then typical 1.0 runs to compare them with
    v2_steps = {run["trace_id"]: run["steps"] for run in by_version["2.0"]}
    worst = [t for t in firing[0]["evidence"] if t in v2_steps]
    assert worst and {v2_steps[t] for t in worst} == {4}, firing[0]["evidence"]
    assert set(firing[0]["evidence"]) - set(worst) <= {run["trace_id"] for run in by_version["1.0"]}

    # The four HTTP 500 runs of 2.0 cluster under llm_unavailable; nothing else failed.
    r = httpx.get(f"{srv.http_url}/api/failures", params={"agent": AGENT, **window}, timeout=60)
    assert r.status_code == 200, r.text
    failures = r.json()
    assert failures["total_failed"] == 4, failures
    clusters = [c for c in failures["clusters"] if c["stop_reason"] == "llm_unavailable"]
    assert [(c["count"], c["versions"], c["span_kind"]) for c in clusters] == [(4, ["2.0"], "llm")], clusters
    failed = {run["trace_id"] for run in by_version["2.0"] if run["ok"] is False}
    assert len(failed) == 4 and set(clusters[0]["examples"]) <= failed
