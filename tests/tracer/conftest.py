"""Fixtures for the tracer tests: a fresh in-memory pipeline per test, always shut down."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

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


@pytest.fixture
def memory_handle_factory() -> Iterator[Callable[..., TracingHandle]]:
    """setup(endpoint="memory", **overrides), shut down after the test."""
    made: list[TracingHandle] = []

    def make(**overrides: Any) -> TracingHandle:
        handle = tracer.setup(service_name="tracer-tests", endpoint="memory", **overrides)
        made.append(handle)
        return handle

    yield make
    for handle in made:
        handle.shutdown(timeout_s=2.0)
