"""A full server (tests/ingest/conftest.py `start_ingest_server`) with the test price table, wrapped in
the api harness's `Server` helper (send OTLP and wait until loaded; GET the query API)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.ingest.api.analytics_runs import TEST_PRICES
from tests.ingest.api.harness import Server


def start_priced_server(start_ingest_server: Callable[..., Any], tmp_path: Path, backend: str = "duckdb") -> Server:
    """`backend`: one of harness.BACKENDS (ClickHouse on embedded chDB in `tmp_path`)."""
    prices = tmp_path / "prices.toml"
    prices.write_text(TEST_PRICES, encoding="utf-8")
    store = {} if backend == "duckdb" else {"store": "clickhouse", "clickhouse_url": f"chdb://{tmp_path / 'clickhouse'}"}
    running = start_ingest_server(price_file=prices, grpc_port=0, **store)
    return Server(running.http_url, running.store, running.settings)
