"""With the demo's kernel features the ticket agent (on a flawless simulated model) must use them:
a refund it submitted is remembered for the user (a real SQLite memory store), so the same user's
later ticket about the same order recalls it and is not refunded twice, while another user's is;
and a legal threat is transferred to a human with the hand-off policy's escalation tool (stop
reason `handoff`, reason `escalation`), never answered by the model."""

from __future__ import annotations

import dataclasses

from kernel.examples import FaultRates, build_agent
from kernel.examples.demo_handoff import TICKET_HANDOFF
from kernel.examples.ticket import REFUND_APPROVAL_LIMIT_USD, REMEMBER_TOOL, TRANSFER_TOOL, build_shop
from kernel.memory import LongTermMemory, SQLiteMemoryStore
from tracer.conventions import HandoffReason, StopReason


def _cheap_delivered_order() -> str:
    return next(o.order_id for o in build_shop().orders.values()
                if o.status == "delivered" and o.total_usd <= REFUND_APPROVAL_LIMIT_USD)


def _calls(result) -> list[str]:
    return [c.name for s in result.steps for c in s.calls]


async def test_a_remembered_refund_is_recalled_by_the_same_user_and_not_paid_twice(tmp_path) -> None:
    memory = LongTermMemory(SQLiteMemoryStore(tmp_path / "memory.sqlite"), min_score=0.1)
    oid = _cheap_delivered_order()

    async def ticket(number: int, user: str):
        built = build_agent("ticket", "v1", seed=number, faults=FaultRates.none(), memory=memory,
                            handoff=TICKET_HANDOFF)
        return await built.agent.run(f"Ticket T-{number}: The item from order {oid} is broken. Please refund me.",
                                     user_id=user)

    first = await ticket(7001, "ana")
    assert first.ok, first.error
    assert _calls(first) == ["query_order", "create_refund_request", "resolve_ticket", REMEMBER_TOOL]
    again = await ticket(7002, "ana")
    assert again.ok, again.error
    assert "create_refund_request" not in _calls(again) and "already submitted" in again.answer
    assert "R-" in again.answer and "T-7001" in again.answer  # what the first conversation kept
    other = await ticket(7003, "ben")
    assert "create_refund_request" in _calls(other), "another user's memories are not ana's"


async def test_a_legal_threat_is_handed_to_a_human_by_the_model() -> None:
    seen = []
    policy = dataclasses.replace(TICKET_HANDOFF, hook=lambda handoff, result: seen.append(handoff))
    built = build_agent("ticket", "v1", seed=1, faults=FaultRates.none(), handoff=policy)
    result = await built.agent.run("Ticket T-8000: This is the third time I'm writing about order A1003. "
                                   "If nothing happens I'm calling my lawyer.")
    assert result.stop_reason == StopReason.HANDOFF and not result.ok and result.answer is None
    assert _calls(result) == [TRANSFER_TOOL]
    assert result.handoff is not None and result.handoff.reason == HandoffReason.ESCALATION
    assert result.handoff.target == "tier2" and "legal threat" in result.handoff.detail
    assert seen == [result.handoff]
