"""When the query API is down, or too old to have an endpoint, every page says what to do instead
of crashing; `steplens trace show` does the same in the terminal."""

from __future__ import annotations

import socket

import pytest

from dashboards.client import ApiUnavailable, EndpointMissing, QueryClient
from tests.dashboards.conftest import open_page, texts
from tests.dashboards.contract_server import contract_server

PAGES = ("overview", "failures", "tools", "cost", "runs", "trace", "compare", "queues")
QUERIES = {"trace": {"trace_id": "a" * 32}, "compare": {"a": "a" * 32, "b": "b" * 32}}


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # closed again when the block ends


@pytest.mark.parametrize("page", PAGES)
def test_api_down_says_how_to_start_it(page: str, ui_env) -> None:
    ui_env(closed_port_url())
    at = open_page(page, QUERIES.get(page))
    assert not at.exception
    errors = "\n".join(str(e.value) for e in at.error)
    assert "cannot reach the steplens query API" in errors and "steplens serve" in errors and "make run" in errors


def test_pages_without_their_endpoint_name_the_server_version_needed(ui_env) -> None:
    with contract_server() as url:  # has the analytics endpoints only: no overview, runs, traces
        ui_env(url)
        for page in ("overview", "runs", "trace"):
            at = open_page(page, QUERIES.get(page))
            assert not at.exception
            endpoint = {"overview": "overview", "runs": "runs", "trace": "traces"}[page]
            assert f"needs a steplens server version with /api/{endpoint}" in texts(at), page


def test_client_raises_typed_errors() -> None:
    with QueryClient(closed_port_url(), cache_ttl_s=0) as c, pytest.raises(ApiUnavailable):
        c.overview()
    with contract_server() as url, QueryClient(url, cache_ttl_s=0) as c, pytest.raises(EndpointMissing) as info:
        c.overview()
    assert info.value.endpoint == "overview"
