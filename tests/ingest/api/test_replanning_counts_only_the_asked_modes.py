"""`GET /api/replanning` counted eval and replay runs' replans in live figures. Real plan-and-execute
runs (tests/ingest/api/plan_runs.py), some labelled eval or replay by `kernel.telemetry.run_labels`,
traced by the real tracer into the real server: plan runs and replans must be those of the asked
modes, live by default, every run with `mode=all`."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

import tracer
from ingest.config import Settings
from kernel import telemetry
from kernel.plan import PlanRunResult
from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.plan_runs import global_run, patch_run, tail_run, unusable_then_patch_run
from tests.ingest.conftest import _ServerThread

# (mode label, run): None leaves the kernel's own default (live).
RUNS = [(None, patch_run), ("eval", tail_run), ("eval", global_run), ("replay", unusable_then_patch_run)]


async def _run_all() -> list[tuple[str, PlanRunResult]]:
    out = []
    for mode, run in RUNS:
        if mode is None:
            out.append(("live", await run()))
        else:
            with telemetry.run_labels(mode=mode):
                out.append((mode, await run()))
    return out


@pytest.fixture(scope="module", params=BACKENDS)
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("replan-modes")
    store = {"store": "clickhouse", "clickhouse_url": f"chdb://{root / 'clickhouse'}"} if request.param == "clickhouse" else {}
    thread = _ServerThread(Settings(db=root / "s.duckdb", host="127.0.0.1", grpc_port=0, **store))
    server = thread.start()
    try:
        handle = tracer.setup(service_name="replan-mode-tests", endpoint=f"{server.http_url}/v1/traces",
                              schedule_delay_ms=50)
        try:
            results = asyncio.run(_run_all())
        finally:
            assert handle.shutdown(10), "the tracer could not flush its spans to the test server"
        assert server.store.wait_loaded(30)
        yield server, results
    finally:
        thread.stop()


@pytest.mark.parametrize("mode, modes", [(None, {"live"}), ("eval", {"eval"}), ("live,replay", {"live", "replay"}),
                                         ("all", {"live", "eval", "replay"})])
def test_replans_of_the_asked_modes_only(loaded: Any, mode: str | None, modes: set[str]) -> None:
    server, results = loaded
    chosen = [r for m, r in results if m in modes]
    params = {"since": "1d", **({"mode": mode} if mode else {})}
    got = httpx.get(f"{server.http_url}/api/replanning", params=params, timeout=30).raise_for_status().json()
    assert got["plan_runs"] == len(chosen)
    assert got["replans"] == sum(len(r.replans) for r in chosen)
    assert got["runs_with_replans"] == sum(bool(r.replans) for r in chosen)
    runs = httpx.get(f"{server.http_url}/api/runs", params=params, timeout=30).raise_for_status().json()["runs"]
    assert sorted(r["trace_id"] for r in runs) == sorted(r.trace_id for r in chosen)
