"""End to end for a foreign client: an OTel GenAI agent (no steplens attributes, the shape OpenAI
Agents / Strands / Agent Framework emit) whose version 2 takes more model turns than version 1 is
flagged by the release regression on steps and by `steplens alerts check` (the real console script),
and its failed runs show on /api/failures under their inferred stop reasons; on each store (DuckDB and
ClickHouse)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from tests.ingest.analytics.synthetic import now_utc, store_overrides
from tests.ingest.api.harness import BACKENDS
from tests.ingest.store import foreign_runs as f
from tests.ingest.store.otlp_build import request

STEPLENS = str(Path(sys.executable).with_name("steplens"))
RULE = {"name": "weather steps", "kind": "threshold", "metric": "steps", "threshold": 3.0, "min_samples": 10,
        "agent": "weather_agent"}  # fmt: skip
PER_VERSION = 32  # the regression test needs 30 runs per side


@pytest.mark.parametrize("backend", BACKENDS)
def test_foreign_v2_regression_alert_and_failures(server_on, tmp_path, backend: str) -> None:  # type: ignore[no-untyped-def]
    srv = server_on(alerts=[RULE], **store_overrides(backend, tmp_path))
    now = now_utc()
    runs = []
    for i in range(PER_VERSION):  # v1: 2-3 turns, two days ago; v2: 4-5 turns, the last hour
        runs.append(f.genai_agent(version="1", turns=2 + i % 2, tool_error=False, start=now - timedelta(days=2, minutes=i)))
        runs.append(f.genai_agent(version="2", turns=4 + i % 2, tool_error=False, start=now - timedelta(minutes=50 - i)))
    failed = [
        f.genai_agent(version="2", turns=2, last_call_fails=True, start=now - timedelta(minutes=20)),
        f.genai_agent(version="2", turns=3, tool_error=False, root_error=True, start=now - timedelta(minutes=10),
                      root_exception=("agents.exceptions.MaxTurnsExceeded", "Max turns (3) exceeded")),
    ]  # fmt: skip
    with httpx.Client(base_url=srv.http_url, timeout=30) as client:
        for spans in [*runs, *failed]:
            r = client.post("/v1/traces", content=request(spans).SerializeToString(),
                            headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
            assert r.status_code == 200, r.text
        assert srv.store.wait_loaded(60)

        body = client.get("/api/regressions", params={"comparison": "release", "metrics": "steps"}).json()
        [finding] = [x for x in body["findings"] if x["agent"] == "weather_agent" and x["metric"] == "steps"]
        assert finding["flagged"] is True and finding["verdict"] == "regression", json.dumps(finding)
        assert (finding["baseline"]["label"], finding["current"]["label"]) == ("version 1", "version 2")

        failures = client.get("/api/failures", params={"since": (now - timedelta(days=3)).isoformat()}).json()
        reasons = {c["stop_reason"]: c for c in failures["clusters"]}
        assert set(reasons) == {"llm_unavailable", "max_steps"}
        assert reasons["max_steps"]["error_type"] == "MaxTurnsExceeded"
        assert reasons["llm_unavailable"]["examples"] == [failed[0][0].trace_id]

    env = {k: v for k, v in os.environ.items() if k != "STEPLENS_API_KEY"}
    check = subprocess.run([STEPLENS, "alerts", "check", "--api", srv.http_url], capture_output=True, text=True,
                           env=env, timeout=60)  # fmt: skip
    assert check.returncode == 1, check.stdout + check.stderr
    assert "weather steps" in check.stdout and "weather_agent" in check.stdout
