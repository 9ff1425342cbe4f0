"""Servers for evaluator tests that restart: the full server (as `steplens serve` wires it, evaluator
service included) on a store the test chooses, so a second server reopens the same database; and
`backend`, the store of every server of these tests (DuckDB unless a test parametrizes it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ingest.config import Settings
from tests.ingest.conftest import _ServerThread


@pytest.fixture
def backend() -> str:
    """The store of the evaluator servers; parametrize it with tests.ingest.api.harness.BACKENDS."""
    return "duckdb"


@pytest.fixture
def server_on(tmp_path: Path, backend: str) -> Iterator[Callable[..., Any]]:
    """`server_on(db_path, **settings)` starts a server on the `backend` store (ClickHouse: embedded
    chDB in one directory beside the DuckDB path, so a second server reopens the same store);
    `.stop()` it or let teardown do it."""
    started: list[_ServerThread] = []

    def start(db: Path | None = None, **overrides: Any) -> Any:
        overrides.setdefault("normalize_processes", 0)
        overrides.setdefault("store", backend)
        if backend == "clickhouse":
            overrides.setdefault("clickhouse_url", f"chdb://{(db or tmp_path / 'steplens.duckdb').parent / 'clickhouse'}")
        settings = Settings(db=db or tmp_path / "steplens.duckdb", host="127.0.0.1", grpc_port=0, **overrides)
        thread = _ServerThread(settings)
        started.append(thread)
        srv = thread.start()
        srv.stop = lambda: (thread.stop(), started.remove(thread))  # type: ignore[attr-defined]
        return srv

    yield start
    for thread in reversed(started):
        thread.stop()
