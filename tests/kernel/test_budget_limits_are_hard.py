"""A budget tracker must report the exhausted limit (and its stop reason) and honest headroom."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kernel.budgets import Budget, BudgetTracker
from kernel.types import Usage
from tracer.conventions import BUDGET_NAMES, StopReason


class FakeClock:
    """A settable clock: real arithmetic, no sleeping in unit tests."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_fresh_tracker_has_full_headroom_and_nothing_exhausted() -> None:
    check = BudgetTracker(Budget(max_steps=5, max_input_tokens=100)).check()
    assert check.exhausted is None
    assert check.exhausted_limit is None
    assert check.headroom == 1.0
    for name in BUDGET_NAMES:
        assert check.line(name).name == name
    assert check.steps.limit == 5 and check.steps.used == 0


def test_unlimited_budget_reports_headroom_one() -> None:
    tracker = BudgetTracker(Budget(max_steps=None, max_consecutive_errors=None))
    tracker.add_step()
    tracker.add_usage(Usage(input_tokens=10_000, output_tokens=10_000))
    check = tracker.check()
    assert check.exhausted is None and check.headroom == 1.0


@pytest.mark.parametrize(
    ("budget", "feed", "reason", "limit_name"),
    [
        (Budget(max_steps=2), lambda t: (t.add_step(), t.add_step()), StopReason.MAX_STEPS, "steps"),
        (Budget(max_input_tokens=50), lambda t: t.add_usage(Usage(input_tokens=50)),
         StopReason.TOKEN_BUDGET, "input_tokens"),
        (Budget(max_output_tokens=10), lambda t: t.add_usage(Usage(output_tokens=11)),
         StopReason.TOKEN_BUDGET, "output_tokens"),
        (Budget(max_cost_usd=0.01), lambda t: t.add_cost(0.02), StopReason.COST_BUDGET, "cost_usd"),
        (Budget(max_consecutive_errors=2),
         lambda t: (t.record_tool_outcome(True), t.record_tool_outcome(True)),
         StopReason.TOOL_ERROR_EXHAUSTED, "consecutive_errors"),
    ],
)
def test_each_limit_maps_to_its_stop_reason(budget, feed, reason, limit_name) -> None:
    tracker = BudgetTracker(budget)
    assert tracker.check().exhausted is None
    feed(tracker)
    check = tracker.check()
    assert check.exhausted == reason
    assert check.exhausted_limit == limit_name


def test_seconds_limit_uses_the_clock_and_remaining_time_shrinks() -> None:
    clock = FakeClock()
    tracker = BudgetTracker(Budget(max_seconds=10), clock=clock)
    assert tracker.remaining_seconds() == 10
    clock.now += 4
    assert tracker.remaining_seconds() == pytest.approx(6)
    assert tracker.check().seconds.used == pytest.approx(4)
    assert tracker.check().headroom == pytest.approx(0.6)
    clock.now += 7
    assert tracker.remaining_seconds() == 0.0
    assert tracker.check().exhausted == StopReason.TIMEOUT


def test_headroom_is_the_smallest_remaining_fraction() -> None:
    tracker = BudgetTracker(Budget(max_steps=10, max_input_tokens=1000, max_cost_usd=1.0))
    tracker.add_step()  # 0.9 left
    tracker.add_usage(Usage(input_tokens=750))  # 0.25 left
    tracker.add_cost(0.5)  # 0.5 left
    check = tracker.check()
    assert check.headroom == pytest.approx(0.25)
    assert check.input_tokens.remaining_fraction == pytest.approx(0.25)


def test_overshoot_clamps_headroom_at_zero() -> None:
    tracker = BudgetTracker(Budget(max_input_tokens=10))
    tracker.add_usage(Usage(input_tokens=25))
    assert tracker.check().headroom == 0.0


def test_a_success_resets_the_error_streak() -> None:
    tracker = BudgetTracker(Budget(max_consecutive_errors=2))
    tracker.record_tool_outcome(True)
    tracker.record_tool_outcome(False)
    tracker.record_tool_outcome(True)
    assert tracker.check().exhausted is None
    assert tracker.consecutive_errors == 1


def test_unparsable_streak_limit() -> None:
    tracker = BudgetTracker(Budget(max_consecutive_unparsable=2))
    tracker.record_parse(True)
    assert not tracker.unparsable_exhausted()
    tracker.record_parse(False)
    tracker.record_parse(True)
    assert not tracker.unparsable_exhausted()
    tracker.record_parse(True)
    assert tracker.unparsable_exhausted()


def test_remaining_output_tokens_caps_at_zero() -> None:
    tracker = BudgetTracker(Budget(max_output_tokens=100))
    tracker.add_usage(Usage(output_tokens=130))
    assert tracker.remaining_output_tokens() == 0
    assert BudgetTracker(Budget()).remaining_output_tokens() is None


def test_nonsense_limits_are_rejected_at_construction() -> None:
    with pytest.raises(ValidationError):
        Budget(max_steps=0)
    with pytest.raises(ValidationError):
        Budget(max_seconds=-1)


def test_budget_check_serializes_for_the_tracer() -> None:
    tracker = BudgetTracker(Budget(max_steps=3))
    tracker.add_step()
    data = tracker.check().model_dump(mode="json")
    assert data["steps"] == {"name": "steps", "used": 1.0, "limit": 3.0}
    assert data["exhausted"] is None
