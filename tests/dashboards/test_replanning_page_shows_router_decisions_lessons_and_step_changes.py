"""The Replanning page shows what each replan was given and changed: the router's decision (the rule,
escalations, a goal change's reset), the lessons, the variable health, the kept/dropped/added steps,
the tool calls the gate counted and a gate's refusal, from a real server loaded with real
plan-and-execute runs (scripted LLM, real tools, traced over OTLP/HTTP). Checked with AppTest (the
table cells, which the browser draws on a canvas) and in a real headless chromium against a real
`steplens ui` (the page renders without an exception box and shows the router metrics)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import tracer
from ingest.config import Settings
from tests.dashboards.browser import chromium, ui_server
from tests.dashboards.browser import open_page as open_in_browser
from tests.dashboards.conftest import open_page, texts
from tests.ingest.api.replan_context_runs import run_all
from tests.ingest.conftest import _ServerThread

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    tmp: Path = tmp_path_factory.mktemp("replan-context-dash")
    thread = _ServerThread(Settings(db=tmp / "steplens.duckdb", host="127.0.0.1", grpc_port=0))
    srv = thread.start()
    try:
        handle = tracer.setup(service_name="replan-context-dash", endpoint=f"{srv.http_url}/v1/traces",
                              schedule_delay_ms=50)
        try:
            results = asyncio.run(run_all())
        finally:
            assert handle.shutdown(10)
        assert srv.store.wait_loaded(30)
        api = httpx.get(f"{srv.http_url}/api/replanning", params={"since": "24h"}, timeout=30).json()
        yield srv.http_url, results, api
    finally:
        thread.stop()


def test_tables_show_each_replans_route_lessons_health_and_steps(ui_env, server) -> None:
    url, results, api = server
    ui_env(url)
    at = open_page("replanning")
    assert not at.exception
    shown = texts(at)
    escalated = sum(r["escalated"] for r in api["routes"])
    assert escalated >= 1 and f"Escalated replans={escalated}" in shown
    assert "Goal-change resets=1" in shown
    steps = api["steps"]
    assert f"Steps kept / dropped / added={steps['kept']} / {steps['dropped']} / {steps['added']}" in shown

    tables = [df.value for df in at.dataframe]
    routes = next(t for t in tables if "granularity used" in t.columns)
    assert list(routes["replans"]) == [r["replans"] for r in api["routes"]]
    recent = next(t for t in tables if "lessons" in t.columns)
    assert len(recent) == len(api["recent_replans"]) == sum(len(r.replans) for r in results.values())
    by_trace = {tid: recent[recent["example"] == f"trace?trace_id={tid}"] for tid in {r.trace_id for r in results.values()}}

    goal = by_trace[results["goal"].trace_id]
    assert sorted(goal["goal-change reset"]) == [False, False, False, True]
    assert sorted(goal["escalated"]) == [False, False, False, True]
    [gate] = by_trace[results["gate"].trace_id].to_dict("records")
    assert gate["verdict"] == "tool_call_gate" and gate["refusal"] == results["gate"].trip.detail
    assert gate["tool calls since plan"] == 2
    assert "get_orders" in gate["lessons"] and "ghost" in gate["lessons"]
    [glob] = by_trace[results["global"].trace_id].to_dict("records")
    assert glob["results clean/stale/void"] == "0/0/1" and glob["dropped"] == "E1, E2"
    [patch] = by_trace[results["patch"].trace_id].to_dict("records")
    rec = results["patch"].replans[0]
    assert (patch["kept"], patch["dropped"], patch["added"]) == (
        ", ".join(rec.kept) or "-", ", ".join(rec.dropped), ", ".join(rec.added))
    assert (patch["rule said"], patch["granularity"]) == ("patch", "patch")


def test_real_browser_renders_the_router_section(server, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url, _, api = server
    with ui_server(url, tmp_path) as ui, chromium(tmp_path) as driver:
        open_in_browser(driver, f"{ui}/replanning?since=24h", "Replanning", '[data-testid="stMetric"]')
        # the page streams in: wait for its last section
        WebDriverWait(driver, 30).until(lambda d: "costliest replanning" in d.find_element(By.TAG_NAME, "body").text)
        body = driver.find_element(By.TAG_NAME, "body").text
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
        assert "Router and replans" in body
        assert "Goal-change resets" in body and "Escalated replans" in body
        steps = api["steps"]
        assert f"{steps['kept']} / {steps['dropped']} / {steps['added']}" in body
        assert "Newest replans" in body
        grids = driver.find_elements(By.CSS_SELECTOR, '[data-testid="stDataFrame"]')
        assert len(grids) >= 5  # granularity, cause, trips, versions, routes, newest replans, runs
