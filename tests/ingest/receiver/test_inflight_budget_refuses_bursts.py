"""A burst of large bodies must be refused with Overloaded (503) instead of being held in memory,
while a lone body is always admitted."""

from __future__ import annotations

import pytest

from ingest.errors import Overloaded
from ingest.otlp.budget import InflightBudget, Reservation


def test_lone_request_is_admitted_even_over_the_limit_and_others_are_refused() -> None:
    budget = InflightBudget(limit=100, retry_after=2)
    first = Reservation(budget)
    first.take(80)
    first.take(50)  # alone: admitted although 130 > 100
    second = Reservation(budget)
    with pytest.raises(Overloaded) as info:
        second.take(10)
    assert info.value.retry_after == 2
    first.release()
    second.take(90)
    assert budget.used == 90
    second.release()
    second.release()  # idempotent
    assert budget.used == 0
