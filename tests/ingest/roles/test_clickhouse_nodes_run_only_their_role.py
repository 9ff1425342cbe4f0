"""On the ClickHouse store, `steplens serve --role ingest|api|worker` are real processes that each do
their part: the ingest node stores what it acknowledges and answers no queries, the api node answers
the query API and takes no spans, and the worker alone runs the singleton jobs (with retention on,
expired spans leave ClickHouse while it runs). Embedded chDB (one data directory, used by one process
at a time) stands in for the ClickHouse server."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.ingest.roles.otlp import PROTOBUF, one_trace
from tests.support.serve_process import serving

pytest.importorskip("chdb")


def _args(tmp_path: Path, role: str, node: str) -> list[str]:
    return ["--role", role, "--store", "clickhouse", "--clickhouse-url", f"chdb://{tmp_path / 'chdb'}",
            "--db", str(tmp_path / node / "steplens.duckdb")]


def _span_count(tmp_path: Path, trace_id: str) -> int:
    from ingest.store.clickhouse.transport import open_transport

    transport = open_transport(f"chdb://{tmp_path / 'chdb'}")
    try:
        table = transport.query_arrow("SELECT count() FROM spans WHERE trace_id = {t:String}", {"t": trace_id})
        return int(table.column(0)[0].as_py())
    finally:
        transport.close()


def test_ingest_then_worker_then_api_each_do_their_part(tmp_path) -> None:
    keep = {"STEPLENS_RETENTION_DAYS": "0", "STEPLENS_NORMALIZE_PROCESSES": "0"}
    env = {"STEPLENS_RETENTION_DAYS": "7", "STEPLENS_RETENTION_INTERVAL_S": "1", "STEPLENS_NORMALIZE_PROCESSES": "0"}
    fresh_body, fresh = one_trace(3)
    old_body, old = one_trace(2, age_days=30)

    with serving(_args(tmp_path, "ingest", "ingest-1"), env=keep) as node:
        assert httpx.get(node.url + "/healthz").json() == {"status": "ok", "role": "ingest"}
        for body in (fresh_body, old_body):
            assert httpx.post(node.url + "/v1/traces", content=body, headers=PROTOBUF).status_code == 200
        r = httpx.get(node.url + "/api/runs")
        assert r.status_code == 404 and "--role api" in r.json()["error"]["message"]
        ready = httpx.get(node.url + "/readyz").json()
        assert ready["role"] == "ingest" and ready["jobs"] == [], ready
    # SIGTERM loaded everything acknowledged into ClickHouse before exit
    assert _span_count(tmp_path, fresh) == 3 and _span_count(tmp_path, old) == 2

    with serving(_args(tmp_path, "ingest", "ingest-1"), env=env) as node:  # retention on: still no sweeper
        assert httpx.get(node.url + "/readyz").json()["jobs"] == []

    with serving(_args(tmp_path, "worker", "worker"), env=env) as node:
        ready = httpx.get(node.url + "/readyz").json()
        # every singleton job runs here on ClickHouse (alert state, queue and evaluator rows in ClickHouse tables)
        assert ready["role"] == "worker" and ready["jobs"] == ["alerts", "queue_fill", "retention"], ready
        assert not ready.get("jobs_unavailable"), ready
        assert httpx.post(node.url + "/v1/traces", content=fresh_body, headers=PROTOBUF).status_code == 404
        assert httpx.get(node.url + "/api/runs").status_code == 404
        time.sleep(3)  # a few 1 s retention intervals
    assert _span_count(tmp_path, old) == 0, "with the worker up, spans older than retention_days are gone"
    assert _span_count(tmp_path, fresh) == 3

    with serving(_args(tmp_path, "api", "api"), env=env) as node:
        ready = httpx.get(node.url + "/readyz").json()
        assert ready == {"status": "ready", "role": "api", "jobs": []}, ready
        r = httpx.post(node.url + "/v1/traces", content=fresh_body, headers=PROTOBUF)
        assert r.status_code == 404
        # the query API is mounted here (the price table needs no query; what each data endpoint answers
        # on ClickHouse is the ClickHouse query suite's business, not the role's)
        r = httpx.get(node.url + "/api/prices")
        assert r.status_code == 200 and r.json()["models"], r.text
