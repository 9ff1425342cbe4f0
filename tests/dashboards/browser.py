"""A real browser and a real `steplens ui` for the dashboards' browser tests.

Debian's chromium driven by selenium (headless, its own profile per test, no background network),
and `steplens ui` as a subprocess on a free port pointed at a real ingest server.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
APP = Path(__file__).resolve().parents[2] / "dashboards" / "app.py"
APP_PAGES = re.findall(r'st\.Page\("(views/\w+\.py)"', APP.read_text())  # every page the app serves
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def ui_server(api_url: str, tmp_path: Path) -> Iterator[str]:
    """`steplens ui --api api_url` on a free port; yields its URL, stops it afterwards."""
    port = free_port()
    exe = shutil.which("steplens", path=str(Path(sys.executable).parent)) or "steplens"
    env = {k: v for k, v in os.environ.items() if k not in ("STEPLENS_API_KEY", "STEPLENS_UI_PASSWORD")}
    log = (tmp_path / "ui.log").open("w")
    proc = subprocess.Popen([exe, "ui", "--api", api_url, "--port", str(port)], env=env, cwd=tmp_path,
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"steplens ui exited early: {(tmp_path / 'ui.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/_stcore/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("steplens ui did not become healthy within 30 s")
            time.sleep(0.2)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@contextmanager
def chromium(tmp_path: Path) -> Iterator[object]:
    """A headless chromium WebDriver (selenium), quit afterwards."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail(f"{CHROMIUM} or {CHROMEDRIVER} is missing: `make browser` installs Debian's chromium and "
                    "chromium-driver (the Makefile runs it before the tests)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()




def open_page(driver: object, url: str, title: str, key_element: str = "h1") -> None:
    """Load `url`, wait for the page's title, its key element and the end of the script run."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)  # type: ignore[attr-defined]
    wait = WebDriverWait(driver, 20)
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), title))
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, key_element)))
    wait.until_not(ec.presence_of_element_located((By.CSS_SELECTOR, '[data-testid="stStatusWidget"]')))
