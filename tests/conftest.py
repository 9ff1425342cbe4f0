"""Fixtures every test directory shares."""

from __future__ import annotations

import pytest


@pytest.fixture
def backend() -> str:
    """The store a test's servers run on (tests/ingest/conftest.py `start_ingest_server`, which other
    directories import): DuckDB unless a test parametrizes it with tests.ingest.api.harness.BACKENDS
    to run on both stores, or names one itself (`store=`)."""
    return "duckdb"
