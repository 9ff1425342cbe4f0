"""Store fixtures: a real DuckDB file and spool in a tmp dir, started and stopped around each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ingest.config import Settings
from ingest.store import SpanStore
from ingest.store.backend import open_store as open_store_of


@pytest.fixture
def backend() -> str:
    """The storage backend of `open_store`; parametrize it with tests.ingest.api.harness.BACKENDS."""
    return "duckdb"


@pytest.fixture
def make_settings(tmp_path: Path, backend: str) -> Callable[..., Settings]:
    def make(**overrides: object) -> Settings:
        # in-thread normalization unless a test asks for worker processes: store logic tests stay
        # fast and their timing (fsync grouping) does not depend on a process round trip
        values: dict[str, object] = {
            "db": tmp_path / "steplens.duckdb", "commit_interval_ms": 5, "normalize_processes": 0,
        }
        if backend == "clickhouse":
            values.update(store="clickhouse", clickhouse_url=f"chdb://{tmp_path / 'clickhouse'}")
        values.update(overrides)
        return Settings(**values)  # type: ignore[arg-type]

    return make


@pytest.fixture
def open_store(make_settings: Callable[..., Settings]) -> Iterator[Callable[..., SpanStore]]:
    """Start a SpanStore on the test's files; settings as keyword overrides, `store_kwargs` for the
    constructor. Every store opened is stopped at the end."""
    opened: list[SpanStore] = []

    def open_(store_kwargs: dict[str, object] | None = None, **overrides: object) -> SpanStore:
        store = open_store_of(make_settings(**overrides), **(store_kwargs or {}))
        store.start()
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.stop()
