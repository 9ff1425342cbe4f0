"""Runs an async task's runner started carry their task's id in the runs rows: `GET /api/runs?task_id=`
lists exactly that task's run, a run outside any task has none. A store that kept such runs before
the runs table had the column gets it from the run spans once, when the server upgrades it.

DuckDB only: it migrates an older DuckDB file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import duckdb
import httpx

import tracer
from ingest.config import Settings
from ingest.schema import MIGRATIONS, RUNS_TASK
from kernel.agent import Agent
from kernel.llm import ScriptedLLM
from kernel.tasks import TaskQueue, TaskRunner
from tests.ingest.conftest import _ServerThread
from tests.support.scripted_runs import add, final


def _desk() -> Agent:
    return Agent("desk", "1", ScriptedLLM([final("x")]), [add])


def _state(url: str, task_ids: list[str]) -> tuple[dict, list]:
    with httpx.Client(base_url=url, timeout=30) as client:
        runs = client.get("/api/runs", params={"agent": "desk"}).raise_for_status().json()["runs"]
        by_task = [[r["trace_id"] for r in client.get("/api/runs", params={"task_id": t}).raise_for_status()
                    .json()["runs"]] for t in task_ids]
    return {r["trace_id"]: r["task_id"] for r in runs}, by_task


def test_task_ids_on_runs_rows_and_backfilled_on_upgrade(tmp_path: Path) -> None:
    settings = Settings(db=tmp_path / "steplens.duckdb", host="127.0.0.1", grpc_port=0)
    thread = _ServerThread(settings)
    server = thread.start()
    queue = TaskQueue(tmp_path / "tasks.sqlite")
    try:
        handle = tracer.setup(service_name="tasks", endpoint=f"{server.http_url}/v1/traces", schedule_delay_ms=50)
        try:
            first, second = queue.submit("desk", "a"), queue.submit("desk", "b")
            asyncio.run(TaskRunner(queue, agents={"desk": _desk}, poll_s=0.05).drain())
            plain = asyncio.run(_desk().run("not a task"))
        finally:
            assert handle.shutdown(10)
        assert server.store.wait_loaded(30)
        tasks = [first, second]
        fresh = _state(server.http_url, tasks)
    finally:
        thread.stop()
    traces = [queue.result(t).trace_id for t in tasks]  # type: ignore[union-attr]
    assert fresh[0] == {traces[0]: first, traces[1]: second, plain.trace_id: None}
    assert fresh[1] == [[traces[0]], [traces[1]]]

    # Make it a store from before the task migration, with the same spans.
    version = MIGRATIONS.index(RUNS_TASK) + 1
    conn = duckdb.connect(str(settings.db))
    try:
        conn.execute("ALTER TABLE runs DROP COLUMN task_id")
        conn.execute("DELETE FROM schema_migrations WHERE version >= ?", [version])
    finally:
        conn.close()

    thread = _ServerThread(settings)
    server = thread.start()
    try:
        upgraded = _state(server.http_url, tasks)
    finally:
        thread.stop()
    assert upgraded == fresh
