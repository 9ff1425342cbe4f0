"""A person works an annotation queue in the real browser and their labels become scores.

Real server (real kernel runs, traced, through OTLP), `steplens ui` as a subprocess, Debian
chromium driven by selenium: the Queues page shows one run at a time with its task and steps; the
person picks values in the score widgets and presses Ctrl+Enter (the Submit shortcut), moves on with
Alt+N and skips with Alt+S; GET /api/scores then holds their labels (source human, author = the name
they gave), and the Results tab shows who labelled what and the agreement with a second person.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.dashboards.browser import SHOTS, chromium, open_page, ui_server
from tests.dashboards.workload import load_agent_runs
from tests.ingest.queues.harness import CONFIGS

pytestmark = pytest.mark.timeout(300)
TASKS = {"2+3?", "list everything", "fetch"}


@pytest.fixture
def world(start_ingest_server, tmp_path: Path) -> Iterator[tuple[str, set[str]]]:
    srv = start_ingest_server(grpc_port=0, scores=CONFIGS, queue_fill_interval_s=0.2)
    created = httpx.post(f"{srv.http_url}/api/queues", timeout=30, json={
        "name": "review", "score_configs": ["correct", "tone"], "labels_per_item": 2,
        "description": "runs to check by hand"})
    assert created.status_code == 201, created.text
    loaded = load_agent_runs(srv.http_url, srv.store)
    deadline = time.monotonic() + 30
    while httpx.get(f"{srv.http_url}/api/queues/review", timeout=30).json()["progress"]["total"] < len(loaded.all):
        assert time.monotonic() < deadline, "the queue did not fill"
        time.sleep(0.1)
    yield srv.http_url, set(loaded.all)


def _radio(driver, label: str, option: str) -> None:
    from selenium.webdriver.common.by import By

    for group in driver.find_elements(By.CSS_SELECTOR, '[data-testid="stRadio"]'):
        if group.text.startswith(label):
            for choice in group.find_elements(By.CSS_SELECTOR, '[data-testid="stRadioOption"]'):
                if choice.text.strip() == option:
                    choice.click()
                    return
    html = [g.get_attribute("outerHTML")[:3000] for g in driver.find_elements(By.CSS_SELECTOR, '[data-testid="stRadio"]')]
    raise AssertionError(f"no radio {label!r} with option {option!r}: {html}")


def _run_shown(driver) -> str:
    from selenium.webdriver.common.by import By

    heads = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "h3") if h.text.startswith("Run ")]
    assert heads, "no run shown"
    return heads[0].split()[1]


def _press(driver, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    driver.find_element(By.TAG_NAME, "h1").click()  # focus the page, not a widget
    chain = ActionChains(driver)
    for key in keys[:-1]:
        chain.key_down(key)
    chain.send_keys(keys[-1])
    for key in reversed(keys[:-1]):
        chain.key_up(key)
    chain.perform()


def _settled(driver) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    time.sleep(0.3)
    WebDriverWait(driver, 20).until_not(
        ec.presence_of_element_located((By.CSS_SELECTOR, '[data-testid="stStatusWidget"]')))


def test_labels_given_in_the_queue_page_become_scores(world, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    api, runs = world
    with ui_server(api, tmp_path) as ui, chromium(tmp_path) as driver:
        open_page(driver, f"{ui}/queues?queue=review&user=alice", "Queues", '[data-testid="stRadio"]')
        first = _run_shown(driver)
        assert first in runs
        body = driver.find_element(By.TAG_NAME, "body").text
        assert any(task in body for task in TASKS) and "Step " in body and "runs to check by hand" in body, body[-3000:]
        assert "0 of 4 runs decided" in body

        _radio(driver, "correct", "false")
        _radio(driver, "tone", "polite")
        _press(driver, Keys.CONTROL, Keys.ENTER)  # Submit
        WebDriverWait(driver, 20).until(lambda d: "you labelled this run" in d.find_element(By.TAG_NAME, "body").text)
        _settled(driver)
        SHOTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SHOTS / "queues.png"))

        scores = httpx.get(f"{api}/api/scores", params={"trace_id": first}, timeout=30).json()["scores"]
        assert {(s["name"], s["value"], s["source"], s["author"]) for s in scores} == {
            ("correct", False, "human", "alice"), ("tone", "polite", "human", "alice")}

        _press(driver, Keys.ALT, "n")  # Next
        WebDriverWait(driver, 20).until(lambda d: _run_shown(d) != first)
        second = _run_shown(driver)
        assert second in runs
        _press(driver, Keys.ALT, "s")  # Skip
        WebDriverWait(driver, 20).until(lambda d: "skipped" in d.find_element(By.TAG_NAME, "body").text
                                        and _run_shown(d) not in (first, second))
        assert httpx.get(f"{api}/api/scores", params={"trace_id": second}, timeout=30).json()["scores"] == []

        # a second person labels the first run through the API: the Results tab shows both and agreement
        bob = httpx.post(f"{api}/api/queues/review/items/{first}/submit", timeout=30,
                         json={"user": "bob", "scores": {"correct": False, "tone": "rude"}})
        assert bob.status_code == 200, bob.text
        open_page(driver, f"{ui}/queues?queue=review&user=alice", "Queues", '[data-testid="stTabs"]')
        tab = next(t for t in driver.find_elements(By.CSS_SELECTOR, '[role="tab"]') if t.text.strip() == "Results")
        tab.click()
        WebDriverWait(driver, 20).until(lambda d: "correct: agreement" in d.find_element(By.TAG_NAME, "body").text)
        _settled(driver)
        body = driver.find_element(By.TAG_NAME, "body").text
        assert "100.0%" in body and "0.0%" in body  # correct: both false; tone: polite vs rude
        driver.save_screenshot(str(SHOTS / "queues-results.png"))
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
