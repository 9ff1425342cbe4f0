"""A store that kept hand-off runs before the runs table had hand-off columns gets them from the run
spans once, when the server upgrades it: the runs rows and /api/overview's hand-off rate equal what
a fresh store computes at load time.

DuckDB only: it migrates an older DuckDB file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import duckdb
import httpx

import tracer
from ingest.config import Settings
from ingest.schema import MIGRATIONS, RUNS_HANDOFF
from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.handoff import HandoffPolicy
from kernel.llm import ScriptedLLM
from tests.ingest.conftest import _ServerThread
from tests.support.scripted_runs import act, add, final


def _state(url: str) -> tuple[dict, dict]:
    with httpx.Client(base_url=url, timeout=30) as client:
        runs = client.get("/api/runs", params={"agent": "desk"}).raise_for_status().json()["runs"]
        overview = client.get("/api/overview", params={"agent": "desk"}).raise_for_status().json()
    return ({r["trace_id"]: (r["handoff_reason"], r["handoff_target"]) for r in runs},
            {"totals": overview["totals"]["handoff_runs"], "handoffs": overview["handoffs"]})


def test_upgrade_backfills_handoffs(tmp_path: Path) -> None:
    settings = Settings(db=tmp_path / "steplens.duckdb", host="127.0.0.1", grpc_port=0)
    thread = _ServerThread(settings)
    server = thread.start()
    policy = HandoffPolicy(target="tier-2")
    try:
        handle = tracer.setup(service_name="backfill", endpoint=f"{server.http_url}/v1/traces", schedule_delay_ms=50)
        try:
            done = asyncio.run(Agent("desk", "1", ScriptedLLM([final("x")]), [add], handoff=policy).run("t"))
            capped = asyncio.run(Agent("desk", "1", ScriptedLLM([act("add", a=1, b=1)]), [add],
                                       budget=Budget(max_steps=1), handoff=policy).run("t"))
        finally:
            assert handle.shutdown(10)
        assert server.store.wait_loaded(30)
        fresh = _state(server.http_url)
    finally:
        thread.stop()
    assert fresh[0] == {done.trace_id: (None, None), capped.trace_id: ("max_steps", "tier-2")}
    assert fresh[1]["totals"] == 1

    # Make it a store from before the hand-off migration, with the same spans.
    version = MIGRATIONS.index(RUNS_HANDOFF) + 1
    conn = duckdb.connect(str(settings.db))
    try:
        conn.execute("ALTER TABLE runs DROP COLUMN handoff_reason")
        conn.execute("ALTER TABLE runs DROP COLUMN handoff_target")
        conn.execute("DELETE FROM schema_migrations WHERE version >= ?", [version])
    finally:
        conn.close()

    thread = _ServerThread(settings)
    server = thread.start()
    try:
        upgraded = _state(server.http_url)
    finally:
        thread.stop()
    assert upgraded == fresh
