"""Stops a model from spinning on the same call, and (optionally) from finishing past an error.

Models stuck in a loop repeat the exact same call; executing it again costs time and money and
tells the model nothing new. So a call identical (name + arguments) to one executed within the
last `window` steps is not executed: the model gets a warning observation instead. A repeat whose
earlier executions already returned the same observation twice, or a repeat after a warning, is
flagged harder (`severity="hard"`); the loop counts a hard flag as an error so a model that keeps
ignoring the warning exhausts its error budget instead of its step budget.

The error-ack policy exists because models tend to "finish" right after a failed tool call with
an answer the failure should have changed. With `require_error_ack=True`, a finish is refused
until the model has made another tool call after the error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from kernel.types import ToolCall

Severity = Literal["soft", "hard"]


@dataclass(frozen=True)
class LoopGuard:
    """Configuration (shared by all runs of an agent). `window=0` disables repeat detection."""

    window: int = 3
    require_error_ack: bool = False

    def session(self) -> LoopGuardSession:
        """Fresh per-run state."""
        return LoopGuardSession(self)


@dataclass(frozen=True)
class LoopVerdict:
    """Why a call was not executed, and the observation text the model gets instead."""

    severity: Severity
    message: str
    previous_step: int
    counts_as_error: bool


def call_key(call: ToolCall) -> str:
    """Canonical identity of a call: same name and same arguments (key order irrelevant)."""
    try:
        args = json.dumps(call.arguments, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):  # arguments a model produced may hold anything
        args = repr(sorted(call.arguments.items(), key=lambda kv: str(kv[0])))
    return f"{call.name}\x00{args}"


@dataclass
class _Execution:
    step: int
    observation: str


@dataclass
class LoopGuardSession:
    """Per-run memory of executed calls, warnings and the unacknowledged tool error."""

    config: LoopGuard
    _executed: dict[str, list[_Execution]] = field(default_factory=dict)
    _warned: set[str] = field(default_factory=set)
    pending_error: str | None = None

    def check_call(self, step: int, call: ToolCall) -> LoopVerdict | None:
        """None when the call may run; a verdict when it repeats a recent identical call."""
        if self.config.window <= 0:
            return None
        key = call_key(call)
        history = self._executed.get(key, [])
        recent = [e for e in history if step - e.step <= self.config.window]
        if not recent:
            return None
        last = recent[-1]
        same_result = len(history) >= 2 and history[-1].observation == history[-2].observation
        hard = same_result or key in self._warned
        self._warned.add(key)
        args = _short(json.dumps(call.arguments, sort_keys=True, default=repr), 200)
        if hard:
            message = (
                f"LOOP DETECTED: you already called {call.name} with arguments {args} "
                f"(step {last.step}) and it returned the same result; repeating it will not change "
                "anything. It was NOT executed again. Use the result you have, change the "
                "arguments, try a different tool, or finish."
            )
        else:
            message = (
                f"Warning: {call.name} was already called with identical arguments {args} at step "
                f"{last.step}; it was NOT executed again. Its result was:\n"
                f"{_short(last.observation, 500)}\n"
                "Use that result, or change the arguments."
            )
        return LoopVerdict(severity="hard" if hard else "soft", message=message,
                           previous_step=last.step, counts_as_error=hard)

    def record_execution(self, step: int, call: ToolCall, observation: str, is_error: bool) -> None:
        """Remember an executed call; an error becomes the pending error, any call acts on it."""
        self._executed.setdefault(call_key(call), []).append(_Execution(step, observation))
        self.pending_error = f"{call.name}: {_short(observation, 300)}" if is_error else None

    def check_finish(self) -> str | None:
        """The refusal observation when finishing is not allowed yet, else None."""
        if not self.config.require_error_ack or self.pending_error is None:
            return None
        return (
            "You cannot finish yet: your last tool call failed and you have not acted on it "
            f"({self.pending_error}). Fix the arguments and retry, use another tool, or verify the "
            "result another way before giving the final answer."
        )


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["LoopGuard", "LoopGuardSession", "LoopVerdict", "Severity", "call_key"]
