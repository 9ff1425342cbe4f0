"""Fixtures for the tracer tests: a fresh in-memory pipeline per test, always shut down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import tracer
from tracer.provider import TracingHandle


@pytest.fixture
def memory_handle() -> Iterator[TracingHandle]:
    handle = tracer.setup(service_name="tracer-tests", service_version="9.9", environment="test", endpoint="memory")
    try:
        yield handle
    finally:
        handle.shutdown(timeout_s=2.0)


@pytest.fixture(autouse=True)
def _no_leaked_handle() -> Iterator[None]:
    """A test that forgets to shut down must not change what the next test records into."""
    yield
    active = tracer.active_handle()
    if active is not None:
        active.shutdown(timeout_s=1.0)
