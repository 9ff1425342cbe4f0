"""Stops a model from spinning on the same call, and (optionally) from finishing past an error.

Models stuck in a loop repeat the exact same call; executing it again costs time and money and
tells the model nothing new. So a call identical (name + arguments) to one executed within the
last `window` steps is not executed: the model gets a warning observation instead. A repeat whose
earlier executions already returned the same observation twice, or a repeat after a warning, is
flagged harder (`severity="hard"`); the loop counts a hard flag as an error so a model that keeps
ignoring the warning exhausts its error budget instead of its step budget.

Models also flail: the same tool again and again, each time with slightly different arguments
(another spelling, another page, another id). With `max_same_tool_in_a_row=N`, a call of the tool
whose last N executed calls in a row were that tool is not executed either: the first time it is
a warning, a further call of the same tool in that streak is a hard flag. Any other executed call
ends the streak. `None` (or 0) disables the rule, and it is off by default: many tools are
rightly called several times in a row with other arguments (pages of a document, one order after
another), so where a streak means flailing depends on the agent's tools. The kernel's own paging and
memory tools (`read_observation`, `remember`) are exempt from it (`streak_exempt`): reading page
after page of a saved-aside result, or writing several facts, is progress, not a loop; an identical
repeat of them is still caught.

A refusal is not a tool call: the loop records it as a guard event on the step (design.md §2),
never as a denied `execute_tool`, so it does not inflate tool error or denial rates.

The error-ack policy exists because models tend to "finish" right after a failed tool call with
an answer the failure should have changed. With `require_error_ack=True`, a finish is refused
until the model has made another tool call after the error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from kernel.memory import REMEMBER_TOOL_NAME
from kernel.observations import READ_TOOL_NAME
from kernel.types import ToolCall
from tracer.conventions import GuardRule

Severity = Literal["soft", "hard"]

# Tools the same-tool streak rule never refuses: the kernel's pager and memory writer, whose repeated
# calls with new arguments (the next offset, another fact) are how they are meant to be used.
STREAK_EXEMPT_TOOLS: frozenset[str] = frozenset({READ_TOOL_NAME, REMEMBER_TOOL_NAME})


@dataclass(frozen=True)
class LoopGuard:
    """Configuration (shared by all runs of an agent). `window=0` disables repeat detection;
    `max_same_tool_in_a_row=None` disables the same-tool streak rule; `streak_exempt` names tools
    it never refuses (an identical repeat of them is still caught)."""

    window: int = 3
    require_error_ack: bool = False
    max_same_tool_in_a_row: int | None = None
    streak_exempt: frozenset[str] = STREAK_EXEMPT_TOOLS

    def session(self) -> LoopGuardSession:
        """Fresh per-run state."""
        return LoopGuardSession(self)


@dataclass(frozen=True)
class LoopVerdict:
    """Why a call was not executed, and the observation text the model gets instead."""

    severity: Severity
    message: str
    previous_step: int | None
    counts_as_error: bool
    rule: GuardRule = GuardRule.REPEATED_CALL


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
    # The current streak of executed calls of one tool: (name, count, step of the last one).
    _streak_tool: str | None = None
    _streak: int = 0
    _streak_step: int = 0
    _streak_warned: bool = False

    def check_call(self, step: int, call: ToolCall) -> LoopVerdict | None:
        """None when the call may run; a verdict when it repeats a recent identical call, or
        continues a streak of the same tool beyond `max_same_tool_in_a_row`."""
        return self._check_repeat(step, call) or self._check_streak(call)

    def _check_streak(self, call: ToolCall) -> LoopVerdict | None:
        limit = self.config.max_same_tool_in_a_row
        if not limit or self._streak_tool != call.name or self._streak < limit or call.name in self.config.streak_exempt:
            return None
        hard = self._streak_warned
        self._streak_warned = True
        if hard:
            message = (
                f"LOOP DETECTED: {call.name} was already called {self._streak} times in a row with "
                "different arguments and you were warned; it was NOT executed. Use the results you "
                "have, try a different tool, or finish."
            )
        else:
            message = (
                f"Warning: {call.name} was already called {self._streak} times in a row with "
                "different arguments; it was NOT executed again. Read the results you have: if "
                "they do not help, a different tool or approach is needed, not another variation."
            )
        return LoopVerdict(severity="hard" if hard else "soft", message=message, previous_step=self._streak_step,
                           counts_as_error=hard, rule=GuardRule.SAME_TOOL_STREAK)

    def _check_repeat(self, step: int, call: ToolCall) -> LoopVerdict | None:
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
                           previous_step=last.step, counts_as_error=hard, rule=GuardRule.REPEATED_CALL)

    def record_execution(self, step: int, call: ToolCall, observation: str, is_error: bool) -> None:
        """Remember an executed call; an error becomes the pending error, any call acts on it."""
        self._executed.setdefault(call_key(call), []).append(_Execution(step, observation))
        if call.name == self._streak_tool:
            self._streak += 1
        else:
            self._streak_tool, self._streak, self._streak_warned = call.name, 1, False
        self._streak_step = step
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


__all__ = ["STREAK_EXEMPT_TOOLS", "LoopGuard", "LoopGuardSession", "LoopVerdict", "Severity", "call_key"]
