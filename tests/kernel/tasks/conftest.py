"""Fixtures of the task tests: real webhook receivers (HTTP servers on 127.0.0.1:0), closed after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.kernel.tasks.webhook_receiver import WebhookReceiver


@pytest.fixture
def make_receiver() -> Iterator[Callable[..., WebhookReceiver]]:
    made: list[WebhookReceiver] = []

    def make(**kwargs: object) -> WebhookReceiver:
        made.append(WebhookReceiver(**kwargs))  # type: ignore[arg-type]
        return made[-1]

    yield make
    for hook in made:
        hook.close()
