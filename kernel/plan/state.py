"""What one plan-and-execute run accumulates, shared by the executor and the agent."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field

from kernel.budgets import BudgetTracker
from kernel.plan.model import IdAllocator, Plan
from kernel.plan.revise import StepStatus
from kernel.plan.signals import FailureSignal
from kernel.plan.variables import VariableTable
from kernel.types import StepRecord
from tracer.conventions import StopReason


class PlanStop(Exception):  # noqa: N818 - control flow, not an error
    """Ends the run with a stop reason. `error_type` is what a span it escapes through records."""

    def __init__(self, reason: StopReason, detail: str | None = None) -> None:
        super().__init__(detail or reason.value)
        self.reason = reason
        self.detail = detail
        self.error_type = reason.value


class GoalInbox:
    """Where a caller drops a new instruction while a run is going; the run picks it up between
    executor rounds and answers it with a global replan. Safe to call from the run's own tools."""

    def __init__(self) -> None:
        self._pending: deque[str] = deque()

    def change(self, instruction: str) -> None:
        if not isinstance(instruction, str) or not instruction.strip():
            raise ValueError("a goal change needs a non-empty instruction")
        self._pending.append(instruction.strip())

    def take(self) -> str | None:
        return self._pending.popleft() if self._pending else None

    def __len__(self) -> int:
        return len(self._pending)


@dataclass
class RunState:
    goal: str
    budget: BudgetTracker
    inbox: GoalInbox | None = None
    cancel: asyncio.Event | None = None
    ids: IdAllocator = field(default_factory=IdAllocator)
    plan: Plan | None = None
    versions: list[Plan] = field(default_factory=list)
    status: dict[str, StepStatus] = field(default_factory=dict)
    skip_reasons: dict[str, str] = field(default_factory=dict)
    variables: VariableTable = field(default_factory=VariableTable)
    records: list[StepRecord] = field(default_factory=list)
    failures: list[FailureSignal] = field(default_factory=list)
    recorded_failures: dict[str, FailureSignal] = field(default_factory=dict)  # after-the-fact
    goal_changes: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    unpriced_models: list[str] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    step_index: int = 0
    tool_calls: int = 0  # tool dispatches of the run (every attempt), the tool-call gate's evidence
    tool_calls_at_plan: int = 0  # `tool_calls` when the current version was adopted

    def next_index(self) -> int:
        self.step_index += 1
        return self.step_index

    def adopt(self, plan: Plan) -> None:
        """Make `plan` current: new steps start pending, carried steps keep their status."""
        self.plan = plan
        self.versions.append(plan)
        self.tool_calls_at_plan = self.tool_calls
        self.status = {s.id: self.status.get(s.id, StepStatus.PENDING) for s in plan.steps}

    def tool_calls_since_plan(self) -> int:
        return self.tool_calls - self.tool_calls_at_plan

    def checkpoint(self) -> None:
        """Between units of work: the caller's cancel event and the run's limits."""
        if self.cancel is not None and self.cancel.is_set():
            raise PlanStop(StopReason.CANCELLED, "cancelled by the caller's event")
        check = self.budget.check()
        if check.exhausted is not None:
            name = check.exhausted_limit or "?"
            line = getattr(check, name)
            raise PlanStop(check.exhausted, f"{name} limit reached: used {line.used:g} of {line.limit:g}")
