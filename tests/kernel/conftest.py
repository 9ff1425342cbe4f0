"""Fixtures of the kernel tests. For the OpenAI-compatible adapter tests: one fake provider per
module, reset per test, and every adapter made with `tests.kernel.openai_adapters.adapter` closed
after its test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.kernel.openai_adapters import OPEN
from tests.support.fake_openai import FakeOpenAI


@pytest.fixture(autouse=True)
async def _close_adapters() -> AsyncIterator[None]:
    yield
    while OPEN:
        await OPEN.pop().aclose()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def fake(server: FakeOpenAI) -> FakeOpenAI:
    server.reset()
    return server
