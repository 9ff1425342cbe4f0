"""Plan-and-execute with replanning: `from kernel.plan import PlanAndExecuteAgent`.

The pieces are usable on their own (tests and custom loops use them directly): the plan model
and checker, the executor, failure signals, the granularity router, the replan prompt, the
lesson book, breakers and gates, and the variable table with its health.
"""

from kernel.plan.agent import PlanAndExecuteAgent
from kernel.plan.breakers import BreakerConfig, Breakers
from kernel.plan.checker import check_plan
from kernel.plan.executor import Executor, ExecutorConfig
from kernel.plan.lessons import LessonBook
from kernel.plan.model import (
    FailurePolicy,
    Fallback,
    IdAllocator,
    Plan,
    PlanDraft,
    PlanFormatError,
    PlanStep,
    StepDraft,
    find_refs,
    parse_plan_draft,
)
from kernel.plan.result import BreakerTrip, CompletedResult, PlanRunResult, ReplanRecord
from kernel.plan.revise import Revision, StepStatus, first_plan, mark_for_global, replace_scope, revise
from kernel.plan.router import Granularity, RouteDecision, Router, RouterRules
from kernel.plan.signals import FailureKind, FailureSignal
from kernel.plan.state import GoalInbox, PlanStop, RunState
from kernel.plan.variables import Variable, VariableHealth, VariableTable

__all__ = [
    "BreakerConfig",
    "BreakerTrip",
    "Breakers",
    "CompletedResult",
    "Executor",
    "ExecutorConfig",
    "FailureKind",
    "FailurePolicy",
    "FailureSignal",
    "Fallback",
    "GoalInbox",
    "Granularity",
    "IdAllocator",
    "LessonBook",
    "Plan",
    "PlanAndExecuteAgent",
    "PlanDraft",
    "PlanFormatError",
    "PlanRunResult",
    "PlanStep",
    "PlanStop",
    "ReplanRecord",
    "Revision",
    "RouteDecision",
    "Router",
    "RouterRules",
    "RunState",
    "StepDraft",
    "StepStatus",
    "Variable",
    "VariableHealth",
    "VariableTable",
    "check_plan",
    "find_refs",
    "first_plan",
    "mark_for_global",
    "parse_plan_draft",
    "replace_scope",
    "revise",
]
