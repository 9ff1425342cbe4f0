"""A store that kept gray-release runs before the runs table had release columns gets them from the
run spans once, when the server upgrades it: release name, cohort and a shadow's primary trace equal
what a fresh store computes at load time.

DuckDB only: it migrates an older DuckDB file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import duckdb
import httpx

import tracer
from ingest.config import Settings
from ingest.schema import MIGRATIONS, RUNS_RELEASE
from kernel.agent import Agent
from kernel.llm import ScriptedLLM
from kernel.release import Release
from tests.ingest.conftest import _ServerThread
from tests.support.scripted_runs import final


def _state(url: str) -> dict[str, tuple[str | None, str | None, str | None]]:
    runs = httpx.get(f"{url}/api/runs", params={"mode": "all"}, timeout=30).raise_for_status().json()["runs"]
    return {r["trace_id"]: (r["release_name"], r["release_cohort"], r["release_primary_trace_id"]) for r in runs}


async def _runs() -> tuple[str, str, str, str]:
    desk = lambda v: Agent("desk", v, ScriptedLLM([final("x")] * 4))  # noqa: E731
    release = Release("desk-2", desk("1"), desk("2"), overrides={"a": "stable", "b": "candidate"}, shadow=desk("2"))
    stable = await release.run("t", user_id="a")
    candidate = await release.run("t", user_id="b")
    shadows = await release.drain(10)
    plain = await desk("1").run("t")
    [mirror] = [s for s in shadows if s.primary_trace_id == stable.trace_id]
    return stable.trace_id, candidate.trace_id, mirror.result.trace_id, plain.trace_id  # type: ignore[return-value]


def test_upgrade_backfills_release_cohorts(tmp_path: Path) -> None:
    settings = Settings(db=tmp_path / "steplens.duckdb", host="127.0.0.1", grpc_port=0)
    thread = _ServerThread(settings)
    server = thread.start()
    try:
        handle = tracer.setup(service_name="backfill", endpoint=f"{server.http_url}/v1/traces", schedule_delay_ms=50)
        try:
            stable, candidate, mirror, plain = asyncio.run(_runs())
        finally:
            assert handle.shutdown(10)
        assert server.store.wait_loaded(30)
        fresh = _state(server.http_url)
    finally:
        thread.stop()
    assert fresh[stable] == ("desk-2", "stable", None)
    assert fresh[candidate] == ("desk-2", "candidate", None)
    assert fresh[mirror] == ("desk-2", "shadow", stable)
    assert fresh[plain] == (None, None, None)

    # Make it a store from before the release migration, with the same spans.
    version = MIGRATIONS.index(RUNS_RELEASE) + 1
    conn = duckdb.connect(str(settings.db))
    try:
        for column in ("release_name", "release_cohort", "release_primary_trace_id"):
            conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
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
