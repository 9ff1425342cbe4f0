"""Agents the task tests submit by reference (`tests.kernel.tasks.task_agents:slow`), so a worker in
another process can build them. Real kernel agents on the kernel's scripted LLM; the `slow` agent's
tool waits `TASKS_SLOW_S` seconds (default 60), long enough to kill or cancel it mid-run."""

from __future__ import annotations

import asyncio
import json
import os

from kernel import Agent, ScriptedLLM, tool
from kernel.budgets import Budget

IN_FLIGHT = {"now": 0, "max": 0}  # runs of `counted` inside this process, for the concurrency test


@tool
async def wait_for_the_warehouse(order: str) -> str:
    """Ask the warehouse about an order (takes a while)."""
    await asyncio.sleep(float(os.environ.get("TASKS_SLOW_S", "60")))
    return f"order {order} left the warehouse"


@tool
async def counted_lookup(order: str) -> str:
    """Look an order up (counts the lookups in flight)."""
    IN_FLIGHT["now"] += 1
    IN_FLIGHT["max"] = max(IN_FLIGHT["max"], IN_FLIGHT["now"])
    try:
        await asyncio.sleep(0.2)
    finally:
        IN_FLIGHT["now"] -= 1
    return f"order {order}: shipped"


def quick() -> Agent:
    return Agent("quick", "1.0", ScriptedLLM(["Final Answer: done"]))


def slow() -> Agent:
    llm = ScriptedLLM(['Action: wait_for_the_warehouse\nAction Input: {"order": "1001"}',
                       "Final Answer: it left the warehouse"])
    return Agent("slow", "1.0", llm, [wait_for_the_warehouse], budget=Budget(max_seconds=600))


def counted() -> Agent:
    llm = ScriptedLLM(['Action: counted_lookup\nAction Input: {"order": "7"}', "Final Answer: shipped"])
    return Agent("counted", "1.0", llm, [counted_lookup])


def escalating() -> Agent:
    """Hands every task to a person with the escalation tool (kernel.handoff)."""
    from kernel.handoff import HandoffPolicy

    llm = ScriptedLLM(['Action: transfer_to_human\nAction Input: {"reason": "asks for a manager"}'])
    return Agent("escalating", "1.0", llm, handoff=HandoffPolicy(target="support-tier-2",
                                                                escalation_tool="transfer_to_human"))


def step_limited() -> Agent:
    """Runs out of steps, which its hand-off policy gives to a person."""
    from kernel.handoff import HandoffPolicy

    llm = ScriptedLLM(policy=lambda messages, tools: "Action: counted_lookup\nAction Input: "
                      + json.dumps({"order": str(len(messages))}))
    return Agent("step-limited", "1.0", llm, [counted_lookup], budget=Budget(max_steps=2),
                 handoff=HandoffPolicy(target="ops-on-call"))
