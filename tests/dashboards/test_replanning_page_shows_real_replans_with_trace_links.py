"""The Replanning page, against a real server loaded with real plan-and-execute runs (scripted LLM,
real tools, traced over OTLP/HTTP): it shows the API's numbers, draws the charts from them, links
every table row and example to the Trace page (`?trace_id=`), and says how to get data when the
range holds no plan-and-execute runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import tracer
from ingest.config import Settings
from tests.dashboards.conftest import open_page, texts
from tests.ingest.api.harness import BACKENDS, backend_settings
from tests.ingest.api.plan_runs import run_all
from tests.ingest.conftest import _ServerThread


@pytest.fixture(scope="module", params=BACKENDS)  # the page only calls the API: a server on either store
def plan_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        tuple[str, dict[str, Any]]]:
    tmp: Path = tmp_path_factory.mktemp("replan-dash")
    thread = _ServerThread(Settings(db=tmp / "steplens.duckdb", host="127.0.0.1", grpc_port=0,
                                    **backend_settings(tmp, request.param)))
    server = thread.start()
    try:
        handle = tracer.setup(service_name="replan-dash", endpoint=f"{server.http_url}/v1/traces", schedule_delay_ms=50)
        try:
            results = asyncio.run(run_all())
        finally:
            assert handle.shutdown(10)
        assert server.store.wait_loaded(30)
        yield server.http_url, results
    finally:
        thread.stop()


def _linked_trace_ids(at: Any) -> list[str]:
    out = []
    for el in at.get("page_link"):
        if el.proto.page.endswith("trace") and el.proto.query_string.startswith("trace_id="):
            out.append(el.proto.query_string.removeprefix("trace_id="))
    return out


def _figures(at: Any) -> dict[str, dict[str, Any]]:
    figures = {}
    for el in at.get("plotly_chart"):
        spec = json.loads(el.proto.spec)
        title = spec["layout"].get("title", {})
        figures[title.get("text") if isinstance(title, dict) else title] = spec
    return figures


def test_page_shows_the_api_numbers_charts_and_trace_links(ui_env, plan_server) -> None:
    url, results = plan_server
    api = httpx.get(f"{url}/api/replanning", params={"since": "24h"}, timeout=30).json()
    ui_env(url)
    at = open_page("replanning")
    assert not at.exception
    shown = texts(at)
    assert f"Plan-and-execute runs={len(results)}" in shown
    assert f"Replans={api['replans']}" in shown and api["replans"] == 8
    assert f"Oscillations caught={api['oscillations']}" in shown and api["oscillations"] == 1
    assert "replan_exhausted runs=3" in shown
    assert "Re-executed work=$0.5000" in shown

    figures = _figures(at)
    granularity = figures["Replans by granularity"]
    assert granularity["data"][0]["x"] == ["patch", "tail", "global"]
    admitted = {g["key"]: g["admitted"] for g in api["by_granularity"]}
    assert granularity["data"][0]["y"] == [admitted["patch"], admitted["tail"], admitted["global"]]
    trips = figures["Breaker and gate trips"]["data"][0]
    assert dict(zip(trips["y"], trips["x"], strict=True)) == {
        "token_gate": 1, "oscillation": 1, "before a replan call": 1}
    versions = figures["Plan versions per run"]["data"][0]
    assert dict(zip(versions["x"], versions["y"], strict=True)) == {"1": 2, "2": 5}

    tables = [df.value for df in at.dataframe]
    by_granularity = next(t for t in tables if "granularity" in t.columns)
    assert list(by_granularity["granularity"]) == [g["key"] for g in api["by_granularity"]]
    assert list(by_granularity["example"]) == [f"trace?trace_id={g['examples'][0]}" for g in api["by_granularity"]]
    trip_table = next(t for t in tables if "verdict" in t.columns)
    no_span = trip_table[trip_table["verdict"] == "before a replan call"].iloc[0]
    assert no_span["example"] == f"trace?trace_id={results['no_span_breaker'].trace_id}"
    runs_table = next(t for t in tables if "run $" in t.columns)
    assert runs_table["example"].iloc[0] == f"trace?trace_id={results['global'].trace_id}"

    linked = _linked_trace_ids(at)
    assert results["oscillation"].trace_id in linked  # "oscillations caught" examples
    exhausted = {r.trace_id for r in results.values() if r.stop_reason == "replan_exhausted"}
    assert exhausted <= set(linked)
    assert set(linked) <= {r.trace_id for r in results.values()}


def test_filters_reach_the_api(ui_env, plan_server) -> None:
    url, results = plan_server
    ui_env(url)
    at = open_page("replanning", {"version": "2.0"})
    assert not at.exception
    v2 = [r for r in results.values() if r.version == "2.0"]
    assert f"Plan-and-execute runs={len(v2)}" in texts(at)


def test_empty_range_says_how_to_get_data(ui_env, plan_server) -> None:
    url, _ = plan_server
    ui_env(url)
    at = open_page("replanning", {"agent": "nobody-runs-this"})
    assert not at.exception
    [info] = at.info
    assert "no plan-and-execute runs" in info.value and "PlanAndExecuteAgent" in info.value
    assert "tracer.setup" in info.value
    assert not at.get("plotly_chart")
