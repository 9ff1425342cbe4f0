"""A database that stored plan-and-execute runs before schema version 5 gets its plan_spans rows
(attributes and replanner usage) once, when the server upgrades it, so /api/replanning covers its
history too and equals what a fresh database computes at load time.

DuckDB only: it migrates an older DuckDB file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import duckdb
import httpx

import tracer
from ingest.config import Settings
from tests.ingest.api.plan_runs import global_run, patch_run
from tests.ingest.conftest import _ServerThread


def _replanning(url: str) -> dict:
    r = httpx.get(f"{url}/api/replanning", timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def test_upgrade_backfills_plan_spans(tmp_path: Path) -> None:
    settings = Settings(db=tmp_path / "steplens.duckdb", host="127.0.0.1", grpc_port=0)
    thread = _ServerThread(settings)
    server = thread.start()
    try:
        handle = tracer.setup(service_name="backfill", endpoint=f"{server.http_url}/v1/traces", schedule_delay_ms=50)
        try:
            results = [asyncio.run(patch_run()), asyncio.run(global_run())]
        finally:
            assert handle.shutdown(10)
        assert server.store.wait_loaded(30)
        fresh = _replanning(server.http_url)
    finally:
        thread.stop()
    assert fresh["replans"] == 2 and fresh["cost"]["replan_llm_calls"] == 2

    # Make it a version-4 database with the same spans: no plan_spans table, no version 5.
    conn = duckdb.connect(str(settings.db))
    try:
        conn.execute("DROP TABLE plan_spans")
        conn.execute("DELETE FROM schema_migrations WHERE version >= 5")
    finally:
        conn.close()

    thread = _ServerThread(settings)
    server = thread.start()
    try:
        upgraded = _replanning(server.http_url)
    finally:
        thread.stop()
    assert upgraded == fresh
    assert upgraded["cost"]["replan_input_tokens"] == sum(rec.input_tokens for r in results for rec in r.replans)
    assert upgraded["cost"]["reexecution_cost_usd"] == results[1].reexecution_cost_usd == 0.5
