"""ClickHouse store fixtures: a ClickHouseStore on embedded chDB in the test's tmp dir."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ingest.config import Settings
from ingest.store.clickhouse.store import ClickHouseStore


@pytest.fixture
def make_ch_settings(tmp_path: Path) -> Callable[..., Settings]:
    def make(**overrides: object) -> Settings:
        values: dict[str, object] = {
            "db": tmp_path / "steplens.duckdb", "commit_interval_ms": 5, "normalize_processes": 0,
            "store": "clickhouse", "clickhouse_url": f"chdb://{tmp_path / 'chdb'}",
        }
        values.update(overrides)
        return Settings(**values)  # type: ignore[arg-type]

    return make


@pytest.fixture
def open_ch_store(make_ch_settings: Callable[..., Settings]) -> Iterator[Callable[..., ClickHouseStore]]:
    """Start ClickHouseStores on the test's files (stopped at the end, last first)."""
    stores: list[ClickHouseStore] = []

    def open_(**overrides: object) -> ClickHouseStore:
        store = ClickHouseStore(make_ch_settings(**overrides))
        store.start()
        stores.append(store)
        return store

    yield open_
    for store in reversed(stores):
        store.stop()
