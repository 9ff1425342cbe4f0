"""Failure signals: every failed step becomes one small, structured, capped record.

The replanner and the router reason on this record only, never on the raw observation: that is
what keeps the replan prompt small and stops a long error page from steering the next plan.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from kernel.types import Observation
from tracer.conventions import ToolDecision, ToolErrorCode

MESSAGE_CAP = 240
EVIDENCE_VALUE_CAP = 120


class FailureKind(StrEnum):
    ENVIRONMENTAL = "environmental"  # timeouts, rate limits: the world was slow, not wrong
    ASSUMPTION = "assumption"  # output shape or content not as the plan expected
    MISSING_VARIABLE = "missing_variable"  # a reference with no usable output behind it
    SEMANTIC = "semantic"  # the step itself was wrong: bad tool, bad arguments, the tool refused
    PERMISSION = "permission"  # denied by policy or waiting for approval
    GOAL_CHANGE = "goal_change"  # not a failure of a step: the caller changed the instruction


def cap(text: str, limit: int = MESSAGE_CAP) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class FailureSignal(BaseModel):
    """One failure. `key` (the step's lineage + kind) is what "the same failure" means to the
    router's escalation and the per-failure breaker."""

    step_id: str
    origin: str
    tool: str
    action: str
    version: int
    kind: FailureKind
    message: str
    recovery: list[str] = Field(default_factory=list)  # what was already tried, in order
    evidence: dict[str, Any] = Field(default_factory=dict)  # small facts, values capped
    premise: bool = False  # the failed step carried the whole plan's premise

    @property
    def key(self) -> tuple[str, str]:
        return (self.origin, self.kind.value)

    @property
    def cause(self) -> str:
        """`steplens.replan.cause`: the error type the replan answers."""
        code = self.evidence.get("error")
        return f"{self.kind.value}:{code}" if code else self.kind.value


_KIND_BY_CODE: dict[ToolErrorCode, FailureKind] = {
    ToolErrorCode.TIMEOUT: FailureKind.ENVIRONMENTAL,
    ToolErrorCode.RATE_LIMITED: FailureKind.ENVIRONMENTAL,
    ToolErrorCode.DENIED: FailureKind.PERMISSION,
    ToolErrorCode.UNKNOWN_TOOL: FailureKind.SEMANTIC,
    ToolErrorCode.INVALID_ARGUMENTS: FailureKind.SEMANTIC,
    ToolErrorCode.EXCEPTION: FailureKind.SEMANTIC,
}


def is_environmental(obs: Observation) -> bool:
    """True for an error retries or a fallback may fix (what the executor retries)."""
    return obs.is_error and obs.error is not None and _KIND_BY_CODE.get(obs.error.error) == FailureKind.ENVIRONMENTAL


def kind_of_observation(obs: Observation) -> FailureKind | None:
    """The failure kind an observation signals, or None when it is a usable result."""
    if obs.decision in (ToolDecision.PENDING_APPROVAL, ToolDecision.SHADOWED):
        return FailureKind.PERMISSION
    if not obs.is_error:
        return None
    if obs.error is None:
        return FailureKind.SEMANTIC
    return _KIND_BY_CODE.get(obs.error.error, FailureKind.SEMANTIC)


def capped_evidence(evidence: dict[str, Any]) -> dict[str, Any]:
    """Evidence values capped so a signal never carries a whole observation."""
    out: dict[str, Any] = {}
    for k, v in evidence.items():
        if isinstance(v, str):
            out[k] = cap(v, EVIDENCE_VALUE_CAP)
        elif isinstance(v, int | float | bool) or v is None:
            out[k] = v
        else:
            out[k] = cap(repr(v), EVIDENCE_VALUE_CAP)
    return out


def observation_message(obs: Observation) -> str:
    if obs.error is not None:
        return obs.error.message
    if obs.decision != ToolDecision.EXECUTED:
        return f"the call was not executed ({obs.decision.value})"
    return "the tool reported an error"
