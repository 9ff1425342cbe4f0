"""Servers for evaluator tests that restart: the full server (as `steplens serve` wires it, evaluator
service included) on a DuckDB file the test chooses, so a second server reopens the same database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ingest.config import Settings
from tests.ingest.conftest import _ServerThread


@pytest.fixture
def server_on(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """`server_on(db_path, **settings)` starts a server; `.stop()` it or let teardown do it."""
    started: list[_ServerThread] = []

    def start(db: Path | None = None, **overrides: Any) -> Any:
        overrides.setdefault("normalize_processes", 0)
        settings = Settings(db=db or tmp_path / "steplens.duckdb", host="127.0.0.1", grpc_port=0, **overrides)
        thread = _ServerThread(settings)
        started.append(thread)
        srv = thread.start()
        srv.stop = lambda: (thread.stop(), started.remove(thread))  # type: ignore[attr-defined]
        return srv

    yield start
    for thread in reversed(started):
        thread.stop()
