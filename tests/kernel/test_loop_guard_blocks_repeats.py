"""The loop guard must stop identical repeated calls and refuse a finish right after an error."""

from __future__ import annotations

from kernel.loop_guard import LoopGuard, call_key
from kernel.types import ToolCall


def call(name: str = "search", **args) -> ToolCall:
    return ToolCall(id=f"c{len(args)}", name=name, arguments=args)


def test_call_identity_ignores_argument_order_and_call_id() -> None:
    a = ToolCall(id="1", name="f", arguments={"x": 1, "y": [1, 2]})
    b = ToolCall(id="2", name="f", arguments={"y": [1, 2], "x": 1})
    assert call_key(a) == call_key(b)
    assert call_key(a) != call_key(ToolCall(id="1", name="g", arguments={"x": 1, "y": [1, 2]}))
    assert call_key(a) != call_key(ToolCall(id="1", name="f", arguments={"x": 2, "y": [1, 2]}))


def test_call_key_survives_unserialisable_arguments() -> None:
    key = call_key(ToolCall(id="1", name="f", arguments={"x": object()}))
    assert key.startswith("f\x00")


def test_repeat_within_window_is_flagged_soft_with_previous_result() -> None:
    guard = LoopGuard(window=3).session()
    assert guard.check_call(1, call(q="a")) is None
    guard.record_execution(1, call(q="a"), "result A", is_error=False)
    verdict = guard.check_call(2, call(q="a"))
    assert verdict is not None
    assert verdict.severity == "soft" and not verdict.counts_as_error
    assert verdict.previous_step == 1
    assert "result A" in verdict.message and "NOT executed" in verdict.message
    assert guard.check_call(2, call(q="b")) is None


def test_repeat_outside_window_is_allowed() -> None:
    guard = LoopGuard(window=2).session()
    guard.record_execution(1, call(q="a"), "A", is_error=False)
    assert guard.check_call(3, call(q="a")) is not None
    assert guard.check_call(4, call(q="a")) is None


def test_repeat_after_a_warning_is_flagged_hard() -> None:
    guard = LoopGuard(window=3).session()
    guard.record_execution(1, call(q="a"), "A", is_error=False)
    assert guard.check_call(2, call(q="a")).severity == "soft"
    hard = guard.check_call(3, call(q="a"))
    assert hard.severity == "hard" and hard.counts_as_error
    assert "LOOP DETECTED" in hard.message


def test_identical_call_with_identical_observation_is_flagged_hard() -> None:
    guard = LoopGuard(window=2).session()
    guard.record_execution(1, call(q="a"), "same", is_error=False)
    guard.record_execution(4, call(q="a"), "same", is_error=False)  # outside the window: ran again
    verdict = guard.check_call(5, call(q="a"))
    assert verdict.severity == "hard"


def test_window_zero_disables_repeat_detection() -> None:
    guard = LoopGuard(window=0).session()
    guard.record_execution(1, call(q="a"), "A", is_error=False)
    assert guard.check_call(2, call(q="a")) is None


def test_error_ack_refuses_finish_until_another_call() -> None:
    guard = LoopGuard(require_error_ack=True).session()
    assert guard.check_finish() is None
    guard.record_execution(1, call(q="a"), '{"error": "timeout"}', is_error=True)
    refusal = guard.check_finish()
    assert refusal is not None and "search" in refusal and "timeout" in refusal
    guard.record_execution(2, call(q="b"), "fine", is_error=False)
    assert guard.check_finish() is None


def test_error_ack_off_by_default() -> None:
    guard = LoopGuard().session()
    guard.record_execution(1, call(q="a"), "boom", is_error=True)
    assert guard.check_finish() is None
