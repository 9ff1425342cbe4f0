"""Tracing is off in these tests unless a test sets it up; never leave a handle behind."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import tracer


@pytest.fixture(autouse=True)
def _no_leaked_handle() -> Iterator[None]:
    yield
    active = tracer.active_handle()
    if active is not None:
        active.shutdown(timeout_s=1.0)
