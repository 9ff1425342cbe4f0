"""Fixtures: a real steplens server per test (see harness.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ingest.config import ApiKey
from tests.ingest.api.harness import Server, start_server, stop_server


@pytest.fixture
def backend() -> str:
    """The store the test's servers run on; parametrize it with harness.BACKENDS to cover both."""
    return "duckdb"


@pytest.fixture
def make_server(tmp_path: Path, backend: str) -> Iterator[Any]:
    """Factory: `make_server(api_keys=[...], query_timeout_s=...)`; everything stops at teardown."""
    started: list[tuple[Any, ...]] = []

    def make(api_keys: list[ApiKey] | None = None, query_timeout_s: float = 10.0) -> Server:
        sub = tmp_path / f"server{len(started)}"
        sub.mkdir()
        item = start_server(sub, api_keys or [], query_timeout_s, backend)
        started.append(item)
        return item[0]

    yield make
    for item in started:
        stop_server(*item)


@pytest.fixture
def server(make_server: Any) -> Server:
    """A server without API keys (every project readable)."""
    return make_server()
