"""Fixtures: the real ingest server (tests/ingest/conftest.py's `_ServerThread`) loaded once per
session with real kernel runs and one 10,001-span trace, and AppTest helpers for the pages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from dashboards.client import clear_cache
from ingest.config import Settings
from tests.dashboards.workload import Loaded, load_agent_runs
from tests.ingest.api.otlp_runs import Emitter
from tests.ingest.conftest import RunningServer, _ServerThread, start_ingest_server  # noqa: F401 (fixture)

APP = Path(__file__).resolve().parents[2] / "dashboards" / "app.py"
WIDE_STEPS = 5000  # 1 root + 2 * 5000 = 10,001 spans


@dataclass
class LoadedServer:
    server: RunningServer
    runs: Loaded
    wide_trace: str

    @property
    def url(self) -> str:
        return self.server.http_url


def send_otlp(url: str, request: object, key: str | None = None) -> None:
    headers = {"Content-Type": "application/x-protobuf"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    r = httpx.post(f"{url}/v1/traces", content=request.SerializeToString(), headers=headers, timeout=60)  # type: ignore[attr-defined]
    assert r.status_code == 200, r.text


@pytest.fixture(scope="session")
def loaded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoadedServer]:
    tmp = tmp_path_factory.mktemp("dash-server")
    thread = _ServerThread(Settings(db=tmp / "steplens.duckdb", host="127.0.0.1", grpc_port=0))
    server = thread.start()
    try:
        runs = load_agent_runs(server.http_url, server.store)
        emitter = Emitter(service="wide-svc")
        wide = emitter.wide_trace(WIDE_STEPS, agent="wide_agent")
        send_otlp(server.http_url, emitter.request())
        assert server.store.wait_loaded(60)
        yield LoadedServer(server, runs, wide)
    finally:
        thread.stop()


@pytest.fixture
def ui_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Point the dashboards at an API (and optionally a key/password), on a loopback address."""
    monkeypatch.delenv("STEPLENS_API_KEY", raising=False)
    monkeypatch.delenv("STEPLENS_UI_PASSWORD", raising=False)
    old_address = st_config.get_option("server.address")
    st_config.set_option("server.address", "127.0.0.1")

    def point(url: str, key: str | None = None, password: str | None = None, address: str = "127.0.0.1") -> None:
        monkeypatch.setenv("STEPLENS_API_URL", url)
        if key:
            monkeypatch.setenv("STEPLENS_API_KEY", key)
        if password:
            monkeypatch.setenv("STEPLENS_UI_PASSWORD", password)
        st_config.set_option("server.address", address)

    clear_cache()
    yield point
    clear_cache()
    st_config.set_option("server.address", old_address)


def open_page(page: str, query: dict[str, str] | None = None, timeout: float = 60) -> AppTest:
    """Run the app, switch to `views/<page>.py` with the given URL query, and run it."""
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    at.query_params.update(query or {})
    at.run()
    at.switch_page(f"views/{page}.py")
    at.query_params.update(query or {})
    return at.run()


def shown(markdown: object) -> str:
    """The Markdown source AppTest reports, with the escapes of dashboards.text resolved: the text a
    reader sees (the page's own `**` emphasis stays, span values' escaped punctuation does not)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", str(markdown)).replace("\u2060", "")


def texts(at: AppTest) -> str:
    """Every piece of visible text of the last run, for `in` assertions."""
    parts: list[str] = []
    for kind in ("title", "subheader", "markdown", "caption", "info", "warning", "error", "success", "code", "text"):
        parts.extend(shown(e.value) for e in getattr(at, kind))
    parts.extend(f"{shown(m.label)}={shown(m.value)}" for m in at.metric)
    parts.extend(shown(e.label) for e in at.expander)
    return "\n".join(parts)
