"""Policies that decide whether a side-effect tool may run.

Only tools with `side_effect=True` consult the policy: reading is safe, acting on the world is
where an agent does damage, so that is where a human or a rule gets a say. Dispatch treats a
policy that raises as a denial (fail closed).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from kernel.types import ToolCall
from tracer.conventions import ToolDecision

if TYPE_CHECKING:
    from kernel.tools import Tool


@dataclass
class PolicyDecision:
    """The verdict on one call. `reason` is shown to the model when the call is not executed."""

    decision: ToolDecision
    reason: str = ""
    # Set with PENDING_APPROVAL: the id under which the approval service holds the request, so
    # the loop can wait for that exact decision (calls ids repeat across runs; approval ids do not).
    approval_id: str | None = None


@runtime_checkable
class SideEffectPolicy(Protocol):
    async def decide(self, tool: Tool, call: ToolCall) -> PolicyDecision: ...


class AllowAll:
    """Run every side-effect tool (the default when no policy is given)."""

    async def decide(self, tool: Tool, call: ToolCall) -> PolicyDecision:
        return PolicyDecision(ToolDecision.EXECUTED, "allowed: no side-effect policy")


class DenyAll:
    """Run no side-effect tool: for read-only agents and untrusted tasks."""

    async def decide(self, tool: Tool, call: ToolCall) -> PolicyDecision:
        return PolicyDecision(ToolDecision.DENIED, f"side-effect tool {tool.name!r} is disabled by policy")


class AllowList:
    """Run only the side-effect tools named here."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)

    async def decide(self, tool: Tool, call: ToolCall) -> PolicyDecision:
        if tool.name in self.names:
            return PolicyDecision(ToolDecision.EXECUTED, f"{tool.name!r} is on the allow list")
        return PolicyDecision(ToolDecision.DENIED, f"side-effect tool {tool.name!r} is not on the allow list")


class ConfirmCallback:
    """Ask an async callback (a human prompt, an approval service) for each call."""

    def __init__(self, confirm: Callable[[Tool, ToolCall], Awaitable[bool]]) -> None:
        self.confirm = confirm

    async def decide(self, tool: Tool, call: ToolCall) -> PolicyDecision:
        if await self.confirm(tool, call):
            return PolicyDecision(ToolDecision.EXECUTED, "confirmed")
        return PolicyDecision(ToolDecision.DENIED, f"the call to {tool.name!r} was not confirmed")


@dataclass
class Shadow:
    """Record side-effect calls without running them: to watch what an agent would do in
    production before trusting it. The recorded calls are kept in `calls`, in order."""

    calls: list[ToolCall] = field(default_factory=list)

    async def decide(self, tool: Tool, call: ToolCall) -> PolicyDecision:
        self.calls.append(call)
        return PolicyDecision(
            ToolDecision.SHADOWED, "shadow mode: side-effect tools are recorded, not executed"
        )


# The shadow scope of the run in progress (kernel.release): while set, it decides every side-effect
# call instead of the agent's own policy, whatever policy the agent was built with.
_SHADOW_SCOPE: ContextVar[Shadow | None] = ContextVar("steplens_shadow_scope", default=None)


@contextmanager
def shadow_scope(shadow: Shadow | None = None) -> Iterator[Shadow]:
    """Runs started inside are shadows: at the dispatch boundary every side-effect tool call is
    recorded in the yielded `Shadow` and not executed, and no hand-off hook is called. Why a scope
    and not the agent's `policy`: a shadow is usually the very agent object that also serves live
    traffic (a candidate version), so it cannot be rebuilt with another policy per run."""
    scope = shadow if shadow is not None else Shadow()
    token = _SHADOW_SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SHADOW_SCOPE.reset(token)


def active_shadow() -> Shadow | None:
    """The shadow scope the current run is in, if any."""
    return _SHADOW_SCOPE.get()
