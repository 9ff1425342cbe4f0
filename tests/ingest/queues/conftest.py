"""Fixture: a real server (tests/ingest/conftest.py) with the queue tests' score configs and a
filler pass every 0.2 s, on the `backend` store (DuckDB unless a test parametrizes it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.ingest.conftest import RunningServer
from tests.ingest.queues.harness import CONFIGS, FILL_INTERVAL_S


@pytest.fixture
def backend() -> str:
    """The store of the queue servers; parametrize it with tests.ingest.api.harness.BACKENDS."""
    return "duckdb"


@pytest.fixture
def queue_server(start_ingest_server: Callable[..., RunningServer], backend: str) -> Callable[..., RunningServer]:
    def start(**overrides: Any) -> RunningServer:
        overrides.setdefault("store", backend)
        overrides.setdefault("grpc_port", 0)
        overrides.setdefault("scores", CONFIGS)
        overrides.setdefault("queue_fill_interval_s", FILL_INTERVAL_S)
        return start_ingest_server(**overrides)

    return start
