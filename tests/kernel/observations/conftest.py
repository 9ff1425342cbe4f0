"""Fixtures of the big-observation tests: the kernel's fake OpenAI server fixtures and
the tracer's in-memory span pipeline."""

from __future__ import annotations

from tests.kernel.conftest import _close_adapters, fake, server  # noqa: F401 - fixtures
from tests.tracer.conftest import memory_handle  # noqa: F401 - fixture
