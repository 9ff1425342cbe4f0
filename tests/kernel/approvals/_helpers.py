"""A tiny agent with one high-risk side effect, driven by a scripted model, traced in memory."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from kernel import Agent, ScriptedLLM, tool
from kernel.policy import SideEffectPolicy
from tracer.conventions import RiskLevel

LEDGER: list[dict] = []


@tool(side_effect=True, risk=RiskLevel.HIGH, description="Refund money to a customer.")
async def refund(order_id: str, amount_usd: float) -> dict:
    LEDGER.append({"order_id": order_id, "amount_usd": amount_usd})
    return {"refund_id": f"R-{order_id}", "status": "submitted"}


@tool(description="Look an order up.")
async def lookup(order_id: str) -> dict:
    return {"order_id": order_id, "total_usd": 500.0}


REFUND_CALL = 'Thought: refund it\nAction: refund\nAction Input: {"order_id": "A1", "amount_usd": 500}'


def agent(policy: SideEffectPolicy, *final: str) -> Agent:
    replies = [REFUND_CALL, *(final or ("Thought: done\nFinal Answer: handled",))]
    return Agent("refunder", "v1", ScriptedLLM(replies), [refund, lookup], policy=policy)


@contextmanager
def captured() -> Iterator[Any]:
    """Spans of the runs inside (`tracer.setup(endpoint="memory")`): the handle's memory exporter."""
    import tracer

    handle = tracer.setup(service_name="approvals-test", endpoint="memory")
    try:
        yield handle.memory_exporter
    finally:
        handle.shutdown()


def by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return sorted((s for s in spans if s.name.startswith(prefix)), key=lambda s: s.start_time)
