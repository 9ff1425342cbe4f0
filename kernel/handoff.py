"""Hand-off to a human: what a run that cannot go on becomes, instead of a silent failure.

Why a policy object rather than a callback alone: which endings are hand-offs (`on`), who receives
them (`target`) and the escalation tool the model may call are one decision a team makes per agent,
and the run span records the outcome (`steplens.run.handoff.reason` / `.target`) so the hand-off
rate can be watched like the failure rate (design.md §2, §4 "Hand-off rate").

The hook is the team's side (open a ticket, page someone, put the conversation in a queue). It may
be sync or async; it runs after the run's result is built and before the run span ends, bounded by
`hook_timeout_s`; an error or a timeout in it is logged and never changes the run's result.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kernel.policy import active_shadow
from kernel.tools import Tool
from kernel.types import Handoff, RunResult
from tracer.conventions import HandoffReason, StopReason

log = logging.getLogger(__name__)

HandoffHook = Callable[[Handoff, RunResult], Awaitable[Any] | Any]

# The stop reasons that hand the run to a human by default, and the reason each is recorded as.
STOP_HANDOFFS: dict[StopReason, HandoffReason] = {
    StopReason.LLM_UNAVAILABLE: HandoffReason.LLM_UNAVAILABLE,
    StopReason.MAX_STEPS: HandoffReason.MAX_STEPS,
    StopReason.REPLAN_EXHAUSTED: HandoffReason.REPLAN_BREAKER,
    StopReason.HANDOFF: HandoffReason.ESCALATION,
}

ESCALATION_DESCRIPTION = (
    "Hand this task to a human when you cannot or must not finish it yourself (the user asks for a "
    "person, the request needs someone's judgement or authority). Say why in `reason`."
)
ESCALATION_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"reason": {"type": "string", "description": "Why a human should take over."}},
    "required": ["reason"],
}


async def _never_dispatched(**_: Any) -> str:
    """The escalation tool ends the run before dispatch; this handler exists only to be a Tool."""
    return "handed off"


@dataclass(frozen=True)
class HandoffPolicy:
    """When a run is handed to a human, to whom, and what is called when it is.

    `on`: the stop reasons that are hand-offs (default: llm_unavailable, max_steps, replan_exhausted;
    the escalation tool's `handoff` stop always is one). `escalation_tool`: a tool name the model may
    call to hand off; calling it ends the run with stop reason `handoff` (ok=false, no answer)."""

    hook: HandoffHook | None = None
    target: str = "human"
    on: frozenset[StopReason] = field(
        default_factory=lambda: frozenset(
            {StopReason.LLM_UNAVAILABLE, StopReason.MAX_STEPS, StopReason.REPLAN_EXHAUSTED}
        )
    )
    escalation_tool: str | None = None
    hook_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        unknown = set(self.on) - set(STOP_HANDOFFS)
        if unknown:
            raise ValueError(f"hand-off reasons must be among {sorted(STOP_HANDOFFS)}, not {sorted(unknown)}")
        if self.hook_timeout_s <= 0:
            raise ValueError("hook_timeout_s must be > 0")

    def escalation(self) -> Tool | None:
        """The escalation tool the model is offered, or None when the policy has none."""
        if not self.escalation_tool:
            return None
        return Tool(
            name=self.escalation_tool,
            description=ESCALATION_DESCRIPTION,
            parameters=ESCALATION_PARAMETERS,
            handler=_never_dispatched,
        )

    def decide(self, result: RunResult) -> Handoff | None:
        """The hand-off this run's ending is, if any."""
        reason = STOP_HANDOFFS.get(result.stop_reason)
        if reason is None or (result.stop_reason not in self.on and result.stop_reason != StopReason.HANDOFF):
            return None
        return Handoff(reason=reason, target=self.target, detail=result.error)


async def hand_off(policy: HandoffPolicy | None, result: RunResult) -> None:
    """Set `result.handoff` when the policy takes the run, then call the hook (bounded, never raising)."""
    if policy is None:
        return
    handoff = policy.decide(result)
    if handoff is None:
        return
    result.handoff = handoff
    if policy.hook is None or active_shadow() is not None:  # a shadow run pages nobody
        return
    try:
        outcome = policy.hook(handoff, result)
        if inspect.isawaitable(outcome):
            await asyncio.wait_for(outcome, policy.hook_timeout_s)
    except TimeoutError:
        log.warning("hand-off hook did not return within %g s; the run's result stands", policy.hook_timeout_s)
    except Exception:
        log.warning("hand-off hook failed; the run's result stands", exc_info=True)
