"""Servers for alert tests: the full server (as `steplens serve` wires it, alert evaluator included)
on a DuckDB file the test chooses (and, with `store="clickhouse"`, the ClickHouse URL it names), so a
restart can reopen the same data."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ingest.config import Settings
from tests.ingest.analytics.synthetic import wait_first_evaluation
from tests.ingest.conftest import _ServerThread


@pytest.fixture
def server_on(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """`server_on(db_path, **settings)` starts a server; `.stop()` it or let teardown do it."""
    started: list[_ServerThread] = []

    def start(db: Path | None = None, wait_key: str | None = None, **overrides: Any) -> Any:
        settings = Settings(db=db or tmp_path / "steplens.duckdb", host="127.0.0.1", grpc_port=0, **overrides)
        thread = _ServerThread(settings)
        started.append(thread)
        srv = thread.start()
        srv.stop = lambda: (thread.stop(), started.remove(thread))  # type: ignore[attr-defined]
        if settings.alerts:
            wait_first_evaluation(srv.http_url, key=wait_key)
        return srv

    yield start
    for thread in reversed(started):
        thread.stop()

