"""The example agents by name: how to build one (any version, any seed) and what work to give it."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.examples import ops, planner, ticket
from kernel.examples.data import Task
from kernel.examples.faults import FaultRates
from kernel.examples.simulated import AgentPolicy, SimulatedLLM
from kernel.handoff import HandoffPolicy
from kernel.llm import ResilientLLM
from kernel.memory import LongTermMemory
from kernel.policy import ConfirmCallback, SideEffectPolicy
from kernel.tools import Tool
from kernel.types import ToolCall

# The example agents hand a run to the support team's tier 2 when it ends on an outage, the step
# limit or a replanning breaker (the default endings), so the demo's hand-off rate has data.
DEMO_HANDOFF = HandoffPolicy(target="tier2")


@dataclass(frozen=True)
class AgentSpec:
    """Everything needed to build and exercise one example agent."""

    name: str
    versions: dict[str, str]  # version -> the documented difference
    system_prompt: str
    budget: Budget
    model: str
    response_model: str
    fallback_model: str
    provider: str
    policy: AgentPolicy | None  # the simulated model's policy (None: the agent has its own model)
    tools: Callable[[str], list[Tool]]  # version -> tools (cached: built once per version)
    sample_task: Callable[[random.Random], Task]
    # Agents that are not the ReAct loop (plan-and-execute) build themselves: (spec, version, seed,
    # faults, fallback_faults, policy, resilient) -> BuiltAgent.
    builder: Callable[..., BuiltAgent] | None = None


_SHOP = ticket.build_shop()


@functools.cache
def _ticket_tools(version: str) -> list[Tool]:
    return ticket.build_tools(_SHOP, version)


@functools.cache
def _ops_tools(version: str) -> list[Tool]:
    return ops.build_tools(version)


@functools.cache
def _planner_tools(version: str) -> list[Tool]:
    return planner.build_tools(version)


def _build_planner(spec: AgentSpec, version: str, *, seed: int | str, faults: FaultRates | None,
                   fallback_faults: FaultRates | None, policy: SideEffectPolicy | None, resilient: bool) -> BuiltAgent:
    from kernel.plan import ExecutorConfig, PlanAndExecuteAgent

    primary = planner.PlannerLLM(seed=f"{seed}:primary", faults=faults, model=spec.model,
                                 response_model=spec.response_model, provider=spec.provider)
    models: list[Any] = [primary]
    llm: Any = primary
    if resilient:
        fallback = planner.PlannerLLM(seed=f"{seed}:fallback", faults=fallback_faults or faults,
                                      model=spec.fallback_model, response_model=spec.fallback_model,
                                      provider=spec.provider)
        models.append(fallback)
        llm = ResilientLLM([primary, fallback], max_attempts_per_model=2, backoff_initial_s=0.01,
                           backoff_max_s=0.05, retry_after_cap_s=0.05)
    agent = PlanAndExecuteAgent(spec.name, version, llm, spec.tools(version), budget=spec.budget, policy=policy,
                                executor=ExecutorConfig(backoff_initial_s=0.01, backoff_max_s=0.05), temperature=0.2,
                                handoff=DEMO_HANDOFF)
    return BuiltAgent(agent, models)


AGENTS: dict[str, AgentSpec] = {
    ticket.AGENT: AgentSpec(
        name=ticket.AGENT,
        versions=ticket.VERSIONS,
        system_prompt=ticket.SYSTEM_PROMPT,
        budget=ticket.BUDGET,
        model=ticket.MODEL,
        response_model=ticket.RESPONSE_MODEL,
        fallback_model=ticket.FALLBACK_MODEL,
        provider=ticket.PROVIDER,
        policy=ticket.TicketPolicy(),
        tools=_ticket_tools,
        sample_task=lambda rng: ticket.sample_task(_SHOP, rng),
    ),
    ops.AGENT: AgentSpec(
        name=ops.AGENT,
        versions=ops.VERSIONS,
        system_prompt=ops.SYSTEM_PROMPT,
        budget=ops.BUDGET,
        model=ops.MODEL,
        response_model=ops.RESPONSE_MODEL,
        fallback_model=ops.FALLBACK_MODEL,
        provider=ops.PROVIDER,
        policy=ops.OpsPolicy(),
        tools=_ops_tools,
        sample_task=ops.sample_task,
    ),
    planner.AGENT: AgentSpec(
        name=planner.AGENT,
        versions=planner.VERSIONS,
        system_prompt="(plan-and-execute: kernel.plan.prompts)",
        budget=planner.BUDGET,
        model=planner.MODEL,
        response_model=planner.RESPONSE_MODEL,
        fallback_model=planner.FALLBACK_MODEL,
        provider=planner.PROVIDER,
        policy=None,
        tools=_planner_tools,
        sample_task=planner.sample_task,
        builder=_build_planner,
    ),
}


async def _approve_small_refunds(tool: Tool, call: ToolCall) -> bool:
    """The demo's stand-in for a human approver: refunds up to the auto-approval limit go through,
    larger ones (and every other high-risk call) are refused, so the agent must escalate."""
    if tool.name != "create_refund_request":
        return True
    amount = call.arguments.get("amount_usd")
    return isinstance(amount, int | float) and amount <= ticket.REFUND_APPROVAL_LIMIT_USD


def demo_policy() -> SideEffectPolicy:
    return ConfirmCallback(_approve_small_refunds)


@dataclass
class BuiltAgent:
    """An agent ready for one run, with its simulated models (their `injected` fault counts).
    `agent` is a ReAct `Agent` or a `PlanAndExecuteAgent`: both `await agent.run(task)`."""

    agent: Any
    models: list[Any]


def build_agent(
    name: str,
    version: str,
    *,
    seed: int | str = 0,
    faults: FaultRates | None = None,
    fallback_faults: FaultRates | None = None,
    policy: SideEffectPolicy | None = None,
    latency_s: tuple[float, float] = (0.0, 0.0),
    resilient: bool = True,
    replace_tools: Sequence[Tool] = (),
    memory: LongTermMemory | None = None,
    handoff: HandoffPolicy | None = None,
) -> BuiltAgent:
    """One run's agent. Build a new one per run: the simulated model holds the run's RNG.

    With `resilient` the model sits behind `ResilientLLM` (2 attempts, then the spec's fallback
    model), as a production agent would; backoff is kept short so the demo stays fast.
    `policy` None means the demo approver (`demo_policy()`).
    The demo's kernel features (kernel.examples.demo_features) come in through the last three:
    `replace_tools` stand in for the agent's tools of the same name (e.g. an MCP server's),
    `memory` is the agent's long-term memory, `handoff` replaces `DEMO_HANDOFF`. ReAct agents only.
    """
    spec = AGENTS.get(name)
    if spec is None:
        raise ValueError(f"unknown example agent {name!r}; known: {', '.join(AGENTS)}")
    if version not in spec.versions:
        raise ValueError(f"agent {name!r} has versions {', '.join(spec.versions)}, not {version!r}")
    if spec.builder is not None:
        return spec.builder(spec, version, seed=seed, faults=faults, fallback_faults=fallback_faults,
                            policy=policy if policy is not None else demo_policy(), resilient=resilient)
    assert spec.policy is not None
    primary = SimulatedLLM(spec.policy, seed=f"{seed}:primary", faults=faults, model=spec.model,
                           response_model=spec.response_model, provider=spec.provider, latency_s=latency_s)
    models = [primary]
    llm = primary
    if resilient:
        fallback = SimulatedLLM(spec.policy, seed=f"{seed}:fallback", faults=fallback_faults or faults,
                                model=spec.fallback_model, provider=spec.provider, latency_s=latency_s)
        models.append(fallback)
        llm = ResilientLLM([primary, fallback], max_attempts_per_model=2, backoff_initial_s=0.01,
                           backoff_max_s=0.05, retry_after_cap_s=0.05)
    replacements = {t.name: t for t in replace_tools}
    agent = Agent(
        spec.name,
        version,
        llm,
        [replacements.get(t.name, t) for t in spec.tools(version)],
        system_prompt=spec.system_prompt,
        budget=spec.budget,
        policy=policy if policy is not None else demo_policy(),
        temperature=0.2,
        handoff=handoff if handoff is not None else DEMO_HANDOFF,
        memory=memory,
    )
    return BuiltAgent(agent, models)
