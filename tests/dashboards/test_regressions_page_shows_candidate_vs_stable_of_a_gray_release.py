"""The Regressions page's "Candidate vs stable" comparison, in a real browser: real kernel runs
routed by a gray release (the candidate takes two more steps) and an A/A release, traced over OTLP
into a real server, `steplens ui` as a subprocess, headless chromium. The planted regression is
flagged naming its release and both cohorts; the A/A release is in the table and never flagged.
The failure this covers: cohorts stored and compared by the API but invisible on the page."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

import tracer
from tests.dashboards.browser import SHOTS, chromium, open_page, ui_server
from tests.support.release_runs import run_release

pytestmark = pytest.mark.timeout(300)


def test_the_candidate_regression_is_flagged_with_its_release_and_the_a_a_release_is_not(
    start_ingest_server, tmp_path: Path
) -> None:
    server = start_ingest_server(grpc_port=0, alerts_defaults=False)
    handle = tracer.setup(service_name="release-ui", endpoint=f"{server.http_url}/v1/traces", schedule_delay_ms=50,
                          max_queue_size=65_536)
    try:
        asyncio.run(run_release("desk-v2", "desk", 2, seed=1))
        asyncio.run(run_release("calm-v2", "calm", 0, seed=2))
    finally:
        assert handle.shutdown(30)
    assert server.store.wait_loaded(60)

    from selenium.webdriver.common.by import By

    with ui_server(server.http_url, tmp_path) as ui, chromium(tmp_path) as driver:
        open_page(driver, f"{ui}/regressions?comparison=cohort&since=1d", "Regressions",
                  '[data-testid="stDataFrame"]')
        SHOTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SHOTS / "regressions-cohort.png"))  # type: ignore[attr-defined]
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')  # type: ignore[attr-defined]
        body = driver.find_element(By.TAG_NAME, "body").text  # type: ignore[attr-defined]
        assert "Gray release (default: every release in range)" in body  # the cohort view, from the URL
        assert "regression · desk · release desk-v2 · steps" in body, body[:3000]
        assert "stable of desk-v2 (version 1) → candidate of desk-v2 (version 2)" in body
        assert "stable side" in body and "candidate side" in body  # each side's example traces, named
        # the A/A release was compared (the API has its findings) and is never in the Flagged list
        aa = httpx.get(f"{server.http_url}/api/regressions", timeout=60,
                       params={"comparison": "cohort", "since": "1d", "release": "calm-v2"}).json()
        assert aa["findings"] and aa["flagged"] == 0
        assert "release calm-v2" not in body
        grid = driver.find_element(By.CSS_SELECTOR, '[data-testid="stDataFrame"]')  # type: ignore[attr-defined]
        assert grid.is_displayed()
