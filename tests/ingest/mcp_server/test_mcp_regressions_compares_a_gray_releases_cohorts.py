"""The MCP `regressions` tool answers `comparison=cohort` as the API does: real kernel runs routed by
a gray release (a candidate that takes two more steps), traced over OTLP/HTTP into a real ingest
server, read by an agent over MCP. An MCP client asking "did the candidate regress?" gets the
flagged steps finding, and a release filter narrows it to one release."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import tracer
from tests.ingest.mcp_server.conftest import McpHttp, answer
from tests.support.release_runs import USERS, run_release

pytestmark = pytest.mark.timeout(300)

FEW_USERS = USERS[:160]


def test_cohort_comparison_over_mcp_flags_the_candidate_as_the_api_does(
        start_ingest_server: Callable[..., Any], start_mcp: Callable[..., McpHttp]) -> None:
    srv = start_ingest_server(grpc_port=0, alerts_defaults=False)
    handle = tracer.setup(service_name="mcp-release-tests", endpoint=f"{srv.http_url}/v1/traces",
                          schedule_delay_ms=50, max_queue_size=65_536)
    try:
        asyncio.run(run_release("desk-v2", "desk", 2, seed=1, users=FEW_USERS))
        asyncio.run(run_release("calm-v2", "calm", 0, seed=2, users=FEW_USERS))
    finally:
        assert handle.shutdown(30), "the tracer could not flush its spans to the test server"
    assert srv.store.wait_loaded(60)
    mcp = start_mcp(srv.http_url)

    over_mcp = answer(mcp.call("regressions", comparison="cohort", since="1d", max_chars=200_000))
    api = httpx.get(f"{srv.http_url}/api/regressions", params={"comparison": "cohort", "since": "1d"},
                    timeout=60).json()
    assert over_mcp["comparison"] == "cohort" and over_mcp["flagged"] == api["flagged"] >= 1
    steps = {(f["release"], f["metric"]): f for f in over_mcp["findings"]}[("desk-v2", "steps")]
    assert steps["flagged"] and steps["verdict"] == "regression"
    assert steps["current"]["label"] == "candidate of desk-v2 (version 2)"

    calm = answer(mcp.call("regressions", comparison="cohort", since="1d", release="calm-v2", max_chars=200_000))
    assert calm["findings"] and {f["release"] for f in calm["findings"]} == {"calm-v2"} and calm["flagged"] == 0
