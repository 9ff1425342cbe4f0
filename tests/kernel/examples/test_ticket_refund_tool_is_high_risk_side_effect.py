"""The refund tool is the dangerous one: it must be flagged as a high-risk side effect, so policies
(approval, shadow mode) get a say, and the agent must react to a refusal by escalating."""

from __future__ import annotations

from kernel.examples import AGENTS, FaultRates, build_agent
from kernel.examples.ticket import REFUND_APPROVAL_LIMIT_USD, build_shop
from kernel.policy import Shadow
from tracer.conventions import RiskLevel, ToolDecision, ToolErrorCode


def _tools(version: str) -> dict:
    return {t.name: t for t in AGENTS["ticket"].tools(version)}


def test_refund_is_side_effect_and_high_risk_in_every_version() -> None:
    for version in ("v1", "v2"):
        tools = _tools(version)
        refund = tools["create_refund_request"]
        assert refund.side_effect and refund.risk == RiskLevel.HIGH
        assert tools["escalate_to_human"].side_effect and tools["escalate_to_human"].risk == RiskLevel.MEDIUM
        assert tools["resolve_ticket"].side_effect and tools["resolve_ticket"].risk == RiskLevel.LOW
        assert not tools["query_order"].side_effect and not tools["query_logistics"].side_effect
        assert tools["query_logistics"].price_usd == 0.002


def _delivered(expensive: bool) -> str:
    shop = build_shop()
    return next(o.order_id for o in shop.orders.values()
                if o.status == "delivered" and (o.total_usd > REFUND_APPROVAL_LIMIT_USD) == expensive)


async def test_demo_approver_denies_large_refunds_and_the_agent_escalates() -> None:
    oid = _delivered(expensive=True)
    built = build_agent("ticket", "v1", seed=0, faults=FaultRates.none())
    result = await built.agent.run(f"Ticket T-7000: The item from order {oid} is broken. Please refund me.")
    refund_obs = next(o for s in result.steps for o in s.observations if o.tool_name == "create_refund_request")
    assert refund_obs.decision == ToolDecision.DENIED and refund_obs.error.error == ToolErrorCode.DENIED
    assert [c.name for s in result.steps for c in s.calls][-1] == "escalate_to_human"
    assert result.ok and "escalated" in result.answer


async def test_small_refund_goes_through() -> None:
    oid = _delivered(expensive=False)
    built = build_agent("ticket", "v1", seed=0, faults=FaultRates.none())
    result = await built.agent.run(f"Ticket T-7001: The item from order {oid} is broken. Please refund me.")
    refund_obs = next(o for s in result.steps for o in s.observations if o.tool_name == "create_refund_request")
    assert refund_obs.decision == ToolDecision.EXECUTED and not refund_obs.is_error
    assert result.ok and "refund" in result.answer and "R-" in result.answer


async def test_shadow_mode_records_the_refund_without_running_it() -> None:
    oid = _delivered(expensive=False)
    shadow = Shadow()
    built = build_agent("ticket", "v1", seed=0, faults=FaultRates.none(), policy=shadow)
    result = await built.agent.run(f"Ticket T-7002: Order {oid} arrived damaged. I'd like my money back.")
    assert [c.name for c in shadow.calls][0] == "create_refund_request"
    refund_obs = next(o for s in result.steps for o in s.observations if o.tool_name == "create_refund_request")
    assert refund_obs.decision == ToolDecision.SHADOWED
    # The model never saw a refund id, so it does not claim one; it says the refund awaits review.
    assert result.ok and "awaiting review" in result.answer and "R-" not in result.answer
    assert len(shadow.calls) == 1  # and it did not retry the shadowed call
