"""`steplens serve` without --role (and with --role all) is the one-process server it always was: OTLP
in, the query API out, and the singleton jobs running, with /healthz and /readyz saying so."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.ingest.roles.otlp import PROTOBUF, one_trace
from tests.support.serve_process import serving


@pytest.mark.parametrize("args", [[], ["--role", "all"]], ids=["default", "explicit"])
def test_all_receives_answers_and_runs_the_jobs(tmp_path, args) -> None:
    with serving([*args, "--db", str(tmp_path / "s.duckdb")], env={"STEPLENS_RETENTION_DAYS": "30"}) as node:
        assert httpx.get(node.url + "/healthz").json() == {"status": "ok", "role": "all"}
        ready = httpx.get(node.url + "/readyz").json()
        assert ready["role"] == "all"
        assert set(ready["jobs"]) == {"alerts", "queue_fill", "retention"}, ready
        body, tid = one_trace(3)
        assert httpx.post(node.url + "/v1/traces", content=body, headers=PROTOBUF).status_code == 200
        deadline = time.monotonic() + 30
        while (r := httpx.get(f"{node.url}/api/traces/{tid}")).status_code == 404 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert r.status_code == 200 and len(r.json()["spans"]) == 3, r.text
        assert httpx.get(node.url + "/api/alerts").status_code == 200
