"""Real browser smoke test: the real server and `steplens ui` (a subprocess, free ports), every
page opened in headless Debian chromium driven by selenium; no exception box, the page's key
element present, a screenshot of each under test-artifacts/screenshots/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dashboards.browser import APP_PAGES, SHOTS, chromium, ui_server
from tests.dashboards.conftest import LoadedServer


@pytest.fixture
def ui_process(loaded_server: LoadedServer, tmp_path: Path) -> Iterator[str]:
    with ui_server(loaded_server.url, tmp_path) as url:
        yield url


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    with chromium(tmp_path) as driver:
        yield driver


def test_every_page_opens_in_a_real_browser(loaded_server: LoadedServer, ui_process: str, browser) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    runs = loaded_server.runs
    pages = [
        ("", "?since=all", "Overview", '[data-testid="stMetric"]'),  # the default page lives at the root
        ("runs", "?since=all", "Runs", '[data-testid="stDataFrame"]'),
        ("trace", f"?trace_id={runs.truncated}", "Trace", '[data-testid="stExpander"]'),
        ("failures", "?since=all", "Failures", '[data-testid="stAlert"], [data-testid="stMetric"]'),
        ("tools", "?since=all", "Tools", '[data-testid="stAlert"], [data-testid="stDataFrame"]'),
        ("cost", "?since=all", "Cost", '[data-testid="stAlert"], [data-testid="stMetric"]'),
        ("compare", f"?a={runs.ok_v1}&b={runs.ok_v2}", "Compare runs", '[data-testid="stAlert"], [data-testid="stMetric"]'),
        ("replanning", "?since=all", "Replanning", '[data-testid="stAlert"], [data-testid="stMetric"]'),
        ("regressions", "?comparison=release", "Regressions", '[data-testid="stMetric"]'),
        ("regressions", "?comparison=drift&since=all", "Regressions", '[data-testid="stMetric"]'),
        ("alerts", "", "Alerts", '[data-testid="stAlert"], [data-testid="stMetric"]'),
        ("approvals", "", "Approvals", '[data-testid="stAlert"], [data-testid="stMetric"]'),
    ]
    assert {p for p, *_ in pages} >= {Path(v).stem for v in APP_PAGES} - {"overview"}, "a page is not opened"
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver = browser
    for page, query, title, key_element in pages:
        driver.get(f"{ui_process}/{page}{query}")
        wait = WebDriverWait(driver, 20)
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), title))
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, key_element)))
        # Let the script run finish (the status widget shows while it runs).
        WebDriverWait(driver, 20).until_not(
            ec.presence_of_element_located((By.CSS_SELECTOR, '[data-testid="stStatusWidget"]'))
        )
        if page == "":  # plotly draws after the script run: wait for the charts' SVG
            wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, '[data-testid="stPlotlyChart"] .main-svg')))
        charts = len(driver.find_elements(By.CSS_SELECTOR, '[data-testid="stPlotlyChart"]'))
        wait.until(lambda d, n=charts: len(d.find_elements(By.CSS_SELECTOR, '[data-testid="stPlotlyChart"] .main-svg')) >= n)
        name = page or "overview"
        if page == "regressions":
            name += "-" + query.split("comparison=")[1].split("&")[0]
        driver.save_screenshot(str(SHOTS / f"{name}.png"))
        boxes = driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
        assert not boxes, f"{page}: exception box shown: {[b.text[:300] for b in boxes]}"
        body = driver.find_element(By.TAG_NAME, "body").text
        assert "Traceback" not in body and "unexpected error" not in body, page
        assert "Page not found" not in body, page
        if page == "":
            assert "Runs" in body and "Success rate" in body
        if page == "trace":
            assert "Step 1" in body and "invoke_agent lister" in body
