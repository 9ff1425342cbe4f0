"""Real browser smoke test on the demo history: the real server loaded by `steplens demo`'s history
(14 days of the example agents, a small run count, through real OTLP), `steplens ui` (a subprocess,
free ports), every page opened in headless Debian chromium driven by selenium; no exception box, the
page's key element present, and every chart drawn over time with more than one point (a history
stamped within one minute drew each trend as a single bar). A screenshot of each page goes to
test-artifacts/screenshots/."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ingest.config import Settings
from kernel.examples.demo import run_demo
from kernel.examples.history import RELEASED_AGENT
from tests.dashboards.browser import APP_PAGES, SHOTS, chromium, ui_server
from tests.ingest.api.content_runs import wait_indexed
from tests.ingest.conftest import _ServerThread

pytestmark = pytest.mark.timeout(600)

DEMO_RUNS, DEMO_DAYS = 240, 14
# Per drawn chart: its x axis type and the most points any of its traces has.
CHART_POINTS = """
return Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')).map(g => ({
    axis: (g._fullLayout && g._fullLayout.xaxis) ? g._fullLayout.xaxis.type : null,
    points: Math.max(0, ...(g.data || []).map(t => (t.x || []).length)),
}));
"""
TREND_PAGES = {"", "failures", "regressions-drift", "sql"}  # pages that draw a trend over time


@dataclass
class _Api:
    url: str

    def get(self, path: str, key: str | None = None, **params: str) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", params=params, timeout=30)


@dataclass
class Demo:
    url: str
    trace_id: str  # a run of the released agent, with steps
    v1: str
    v2: str
    session: str  # a multi-turn conversation of the demo


def _one(url: str, **params: str) -> dict:
    runs = httpx.get(f"{url}/api/runs", params={"limit": 1, **params}, timeout=30)
    (run,) = runs.raise_for_status().json()["runs"]
    return run


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    tmp = tmp_path_factory.mktemp("demo-history")
    thread = _ServerThread(Settings(db=tmp / "steplens.duckdb", host="127.0.0.1", grpc_port=0, normalize_processes=0))
    server = thread.start()
    try:
        summary = run_demo(server.http_url, DEMO_RUNS, seed=0, concurrency=32, progress=False, days=DEMO_DAYS)
        assert summary.export_complete, summary
        assert server.store.wait_loaded(60)
        wait_indexed(_Api(server.http_url))  # the Search page's results
        v1 = _one(server.http_url, agent=RELEASED_AGENT, version="v1", ok="true")
        v2 = _one(server.http_url, agent=RELEASED_AGENT, version="v2", ok="true")
        sessions = httpx.get(f"{server.http_url}/api/sessions", params={"since": "30d", "limit": 1000}, timeout=30)
        multi = [s["session_id"] for s in sessions.raise_for_status().json()["sessions"] if s["runs"] >= 2]
        assert multi, "the demo history has no multi-turn session"
        yield Demo(server.http_url, v2["trace_id"], v1["trace_id"], v2["trace_id"], multi[0])
    finally:
        thread.stop()


@pytest.fixture
def ui_process(demo: Demo, tmp_path: Path) -> Iterator[str]:
    with ui_server(demo.url, tmp_path) as url:
        yield url


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    with chromium(tmp_path) as driver:
        yield driver


def test_every_page_opens_on_the_demo_history_with_trends_of_many_points(
    demo: Demo, ui_process: str, browser
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    pages = [
        ("", "?since=7d", "Overview", '[data-testid="stMetric"]'),  # the default page lives at the root
        ("runs", "?since=7d", "Runs", '[data-testid="stDataFrame"]'),
        ("runs", "?since=30d&filter=steps%20%3E%201%20and%20tool_name%20exists", "Runs", '[data-testid="stDataFrame"]'),
        ("search", "?since=30d&q=cheapest%20vendor", "Search", '[data-testid="stPageLink"]'),
        ("trace", f"?trace_id={demo.trace_id}", "Trace", '[data-testid="stExpander"]'),
        ("failures", "?since=30d", "Failures", '[data-testid="stMetric"]'),
        ("tools", "?since=7d", "Tools", '[data-testid="stDataFrame"]'),
        ("cost", "?since=7d", "Cost", '[data-testid="stMetric"]'),
        ("compare", f"?a={demo.v1}&b={demo.v2}", "Compare runs", '[data-testid="stAlert"], [data-testid="stMetric"]'),
        ("replanning", "?since=30d", "Replanning", '[data-testid="stAlert"], [data-testid="stMetric"]'),
        ("regressions", "?comparison=release&since=30d", "Regressions", '[data-testid="stMetric"]'),
        ("regressions", "?comparison=drift&since=30d", "Regressions", '[data-testid="stMetric"]'),
        ("alerts", "", "Alerts", '[data-testid="stAlert"], [data-testid="stMetric"]'),
        ("approvals", "", "Approvals", '[data-testid="stAlert"], [data-testid="stMetric"]'),
        ("sql", "", "SQL", '[data-testid="stDataFrame"]'),
        ("sessions", "?since=all", "Sessions", '[data-testid="stDataFrame"]'),
        ("sessions", f"?session={demo.session}", "Sessions", '[data-testid="stChatMessage"]'),
        ("graph", "?since=7d", "Agent graph", '[data-testid="stPlotlyChart"]'),
        ("queues", "?queue=failed-runs&user=visitor", "Queues", '[data-testid="stRadio"]'),  # a run to label
        ("evaluators", "", "Evaluators", '[data-testid="stAlert"], [data-testid="stDataFrame"]'),
    ]
    assert {p for p, *_ in pages} >= {Path(v).stem for v in APP_PAGES} - {"overview"}, "a page is not opened"
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver = browser
    for page, query, title, key_element in pages:
        driver.get(f"{ui_process}/{page}{query}")
        wait = WebDriverWait(driver, 30)
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), title))
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, key_element)))
        # Let the script run finish (the status widget shows while it runs).
        WebDriverWait(driver, 30).until_not(
            ec.presence_of_element_located((By.CSS_SELECTOR, '[data-testid="stStatusWidget"]'))
        )
        name = page or "overview"
        if page == "sessions" and "session=" in query:
            name += "-transcript"
        if page == "regressions":
            name += "-" + query.split("comparison=")[1].split("&")[0]
        if page == "runs" and "filter=" in query:
            name += "-filter"
        if name in TREND_PAGES:  # plotly draws after the script run: wait for the charts' SVG
            wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, '[data-testid="stPlotlyChart"] .main-svg')))
        charts = len(driver.find_elements(By.CSS_SELECTOR, '[data-testid="stPlotlyChart"]'))
        wait.until(lambda d, n=charts: len(d.find_elements(By.CSS_SELECTOR, '[data-testid="stPlotlyChart"] .main-svg')) >= n)
        driver.save_screenshot(str(SHOTS / f"{name}.png"))
        boxes = driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
        assert not boxes, f"{page}: exception box shown: {[b.text[:300] for b in boxes]}"
        body = driver.find_element(By.TAG_NAME, "body").text
        assert "Traceback" not in body and "unexpected error" not in body, page
        assert "Page not found" not in body, page
        drawn = driver.execute_script(CHART_POINTS)
        trends = [c for c in drawn if c["axis"] == "date"]
        if name in TREND_PAGES:
            assert trends, f"{name}: no chart over time drawn"
        assert all(c["points"] > 1 for c in trends), f"{name}: a trend of one point: {drawn}"
        if page == "":
            assert "Runs" in body and "Success rate" in body
        if page == "sql":  # the default query: runs per day and agent over the demo's 14 days
            assert "Rows" in body and "Download CSV" in body
        if name == "sessions-transcript":
            assert "turn 2" in body and "open this turn's trace" in body
        if page == "graph":
            assert "built from the newest" in body and "query_logistics" in body
        if page == "trace":
            assert "Step 1" in body and f"invoke_agent {RELEASED_AGENT}" in body and "live run" in body
