"""Ticket agent (customer service) over a small in-memory shop.

Tools: `query_order`, `query_logistics` (a paid carrier API), `create_refund_request` (side
effect, HIGH risk: the demo's approver only lets small refunds through), `escalate_to_human`
(side effect, medium risk) and `resolve_ticket` (side effect, low risk). Unknown orders and
tracking numbers raise a structured `NotFound`.

Versions (the documented difference the regression features should find):
- v1: `query_logistics` says it needs the tracking number from `query_order`.
- v2: `query_logistics` is described vaguely ("Look up shipping information."). Models then
  often pass the order id straight to it, get a not-found error, and only then look the order
  up: "where is my order" tickets take one more step, one more tool error and one more paid
  carrier lookup on average.
"""

from __future__ import annotations

import asyncio
import random
import re
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Annotated, Any

from pydantic import Field

from kernel.budgets import Budget
from kernel.examples.data import Ledger, NotFound, Task, short_id
from kernel.examples.memory import Memory
from kernel.examples.simulated import Act, Answer, Intent
from kernel.tools import Tool, tool
from tracer.conventions import RiskLevel, ToolErrorCode

AGENT = "ticket"
MODEL = "gpt-4o-mini"
RESPONSE_MODEL = "gpt-4o-mini-2024-07-18"
FALLBACK_MODEL = "gpt-4.1-mini"
PROVIDER = "openai"
BUDGET = Budget(max_steps=8, max_input_tokens=12_000, max_consecutive_errors=3)
REFUND_APPROVAL_LIMIT_USD = 150.0
# The hand-off policy's escalation tool in the demo (kernel.examples.demo_handoff): offered, the
# model transfers legal threats to a person instead of answering them itself.
TRANSFER_TOOL = "transfer_to_human"
# The long-term memory tool `Agent(memory=...)` registers (kernel.memory); offered, the model
# keeps what a later conversation about the same order should know.
REMEMBER_TOOL = "remember"

SYSTEM_PROMPT = (
    "You are a customer-service agent for an online shop. Read the ticket, look up the facts "
    "with your tools, act (refund, escalate or resolve the ticket), then answer the customer "
    "briefly and precisely. Never promise what a tool did not confirm."
)

LOGISTICS_V1 = (
    "Shipment status, last scan and ETA from the carrier. Needs the tracking number from "
    "query_order (field tracking_number); order ids are not accepted."
)
LOGISTICS_V2 = "Look up shipping information."
VERSIONS = {
    "v1": "query_logistics says it needs the tracking number from query_order",
    "v2": "query_logistics is described vaguely; models pass order ids to it first (more steps)",
}

# ---- the data set ------------------------------------------------------------------------------

_CUSTOMERS = ("Ana Lima", "Ben Okafor", "Chen Wei", "Dana Cohen", "Emil Novak", "Fatima Zahra",
              "Gus Berg", "Hana Sato", "Ivan Petrov", "Jade Moreau")
_ITEMS = (("espresso machine", 249.0), ("desk lamp", 39.9), ("running shoes", 119.0),
          ("headphones", 199.0), ("backpack", 79.5), ("coffee grinder", 89.0), ("blender", 149.0),
          ("monitor stand", 59.0), ("rain jacket", 129.0), ("kettle", 45.0))
_CARRIERS = ("UPS", "DHL", "FedEx")
TODAY = date(2025, 11, 3)


@dataclass(frozen=True)
class Order:
    order_id: str
    customer: str
    item: str
    total_usd: float
    status: str  # processing, shipped, delivered
    placed_on: str
    tracking_number: str | None


@dataclass(frozen=True)
class Shipment:
    tracking_number: str
    carrier: str
    status: str  # in_transit, delayed, delivered
    last_scan: str
    eta: str


@dataclass
class Shop:
    """The in-memory world of the ticket agent: orders, shipments and a ledger of actions."""

    orders: dict[str, Order]
    shipments: dict[str, Shipment]
    ledger: Ledger = field(default_factory=Ledger)


def build_shop(size: int = 40) -> Shop:
    """Deterministic: the same shop every time (seeded), so tasks and answers line up."""
    rng = random.Random("ticket-shop")
    orders: dict[str, Order] = {}
    shipments: dict[str, Shipment] = {}
    for n in range(size):
        order_id = f"A{1001 + n}"
        item, price = rng.choice(_ITEMS)
        placed = TODAY - timedelta(days=rng.randint(1, 20))
        status = rng.choices(("processing", "shipped", "delivered"), weights=(2, 5, 3))[0]
        tracking = None
        if status != "processing":
            carrier = rng.choice(_CARRIERS)
            tracking = f"{carrier[:2].upper()}{rng.randint(10**8, 10**9 - 1)}"
            ship_status = "delivered" if status == "delivered" else rng.choices(("in_transit", "delayed"), (4, 1))[0]
            eta = placed + timedelta(days=rng.randint(3, 9) + (4 if ship_status == "delayed" else 0))
            hub = rng.choice(("Leipzig hub", "Memphis hub", "Louisville hub", "Rotterdam depot"))
            shipments[tracking] = Shipment(tracking, carrier, ship_status, f"{hub}, {placed + timedelta(days=2)}",
                                           eta.isoformat())
        orders[order_id] = Order(order_id, rng.choice(_CUSTOMERS), item, price, status, placed.isoformat(), tracking)
    return Shop(orders, shipments)


# How long the carrier API behind `query_logistics` takes to answer, for the calls made in this
# context (the demo's history doubles it after a date; 0 elsewhere). A ContextVar rather than a
# build argument because the tools are built once per version and shared by concurrent runs.
CARRIER_LATENCY_S: ContextVar[float] = ContextVar("ticket_carrier_latency_s", default=0.0)


def build_tools(shop: Shop, version: str) -> list[Tool]:
    """The five tools over `shop`. Only `query_logistics`'s description depends on the version."""

    @tool(description="Look up an order by its id (like A1001): customer, item, total, status, tracking number.")
    async def query_order(order_id: Annotated[str, Field(description="order id, e.g. A1001")]) -> dict:
        order = shop.orders.get(order_id.strip().upper())
        if order is None:
            raise NotFound("order", order_id, "order ids look like A1001")
        return order.__dict__.copy()

    @tool(description=LOGISTICS_V1 if version == "v1" else LOGISTICS_V2, price_usd=0.002)
    async def query_logistics(tracking_number: Annotated[str, Field(description="carrier tracking number")]) -> dict:
        if (latency := CARRIER_LATENCY_S.get()) > 0:
            await asyncio.sleep(latency)
        shipment = shop.shipments.get(tracking_number.strip().upper())
        if shipment is None:
            raise NotFound("shipment", tracking_number)
        return shipment.__dict__.copy()

    @tool(
        description="Ask finance to refund (part of) an order. Needs a human approval above the auto-approval limit.",
        side_effect=True,
        risk=RiskLevel.HIGH,
    )
    async def create_refund_request(
        order_id: str,
        amount_usd: Annotated[float, Field(gt=0)],
        reason: str,
    ) -> dict:
        order = shop.orders.get(order_id.strip().upper())
        if order is None:
            raise NotFound("order", order_id)
        if amount_usd > order.total_usd:
            raise ValueError(f"refund {amount_usd:.2f} exceeds the order total {order.total_usd:.2f}")
        refund_id = short_id("R", order.order_id, amount_usd)
        shop.ledger.record("refund", refund_id=refund_id, order_id=order.order_id, amount_usd=amount_usd)
        return {"refund_id": refund_id, "order_id": order.order_id, "amount_usd": amount_usd, "status": "submitted"}

    @tool(description="Hand the ticket to a human agent (tier 2), with the reason.", side_effect=True,
          risk=RiskLevel.MEDIUM)
    async def escalate_to_human(ticket_id: str, reason: str) -> dict:
        escalation_id = short_id("E", ticket_id, reason)
        shop.ledger.record("escalation", escalation_id=escalation_id, ticket_id=ticket_id)
        return {"escalation_id": escalation_id, "queue": "tier2", "first_response_within_hours": 4}

    @tool(description="Close the ticket with a short resolution note.", side_effect=True)
    async def resolve_ticket(ticket_id: str, resolution: str) -> dict:
        shop.ledger.record("resolution", ticket_id=ticket_id, resolution=resolution)
        return {"ticket_id": ticket_id, "status": "resolved"}

    return [query_order, query_logistics, create_refund_request, escalate_to_human, resolve_ticket]


# ---- tasks -------------------------------------------------------------------------------------

_WHERE = ("Hi, where is my order {oid}? It's been a while.", "Order {oid} hasn't arrived yet. Any news?",
          "Can you tell me when {oid} will be delivered?")
_REFUND = ("Order {oid} arrived damaged (the {item} is cracked). I'd like my money back.",
           "The {item} from order {oid} is broken. Please refund me.")
_LEGAL = ("This is the third time I'm writing about order {oid}. If nothing happens I'm calling my lawyer.",)
KINDS = {"where_is": 0.45, "refund": 0.25, "unknown_order": 0.15, "legal_threat": 0.15}


def sample_task(shop: Shop, rng: random.Random) -> Task:
    """A ticket, with the facts a right answer must contain."""
    kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
    ticket = f"T-{rng.randint(5000, 9999)}"
    if kind == "unknown_order":
        oid = f"A{rng.randint(2000, 9999)}"
        text = rng.choice(_WHERE).format(oid=oid)
        return Task(AGENT, kind, f"Ticket {ticket}: {text}", (oid, "could not find"))
    pool = sorted(shop.orders) if kind != "refund" else sorted(o for o, v in shop.orders.items() if v.status == "delivered")
    order = shop.orders[rng.choice(pool)]
    if kind == "where_is":
        text = rng.choice(_WHERE).format(oid=order.order_id)
        expect = (order.order_id, expected_status(shop, order))
    elif kind == "refund":
        text = rng.choice(_REFUND).format(oid=order.order_id, item=order.item)
        expect = (order.order_id, "refund" if order.total_usd <= REFUND_APPROVAL_LIMIT_USD else "escalated")
    else:
        text = rng.choice(_LEGAL).format(oid=order.order_id)
        expect = (ticket, "escalated")
    return Task(AGENT, kind, f"Ticket {ticket}: {text}", expect)


def expected_status(shop: Shop, order: Order) -> str:
    if order.status == "processing":
        return "not shipped yet"
    if order.status == "delivered":
        return "delivered"
    assert order.tracking_number is not None
    return shop.shipments[order.tracking_number].eta


# ---- what a competent model does ---------------------------------------------------------------

_TICKET_RE = re.compile(r"\bT-\d+\b")
_ORDER_RE = re.compile(r"\bA\d{4}\b")


def _kind(task: str) -> str:
    lowered = task.lower()
    if "lawyer" in lowered or "third time" in lowered:
        return "legal_threat"
    if "refund" in lowered or "money back" in lowered:
        return "refund"
    return "where_is"


def _memory_key(oid: str) -> str:
    return f"order {oid}"


def _remember(memory: Memory, oid: str, fact: str) -> Act | None:
    """Keep `fact` about the order for the customer's later conversations, once per run, when the
    agent has long-term memory (its `remember` tool is offered); None: nothing to do."""
    if not memory.offers(REMEMBER_TOOL) or memory.tried(REMEMBER_TOOL):
        return None
    return Act(REMEMBER_TOOL, {"key": _memory_key(oid), "value": fact},
               "I know what happened to this order; a later conversation needs it; next action: remember it.")


def _earlier(memory: Memory, oid: str) -> str | None:
    """What long-term memory recalled about this order from the customer's earlier conversations."""
    prefix = f"{_memory_key(oid)}: "
    return next((line[len(prefix):] for line in memory.recalled if line.startswith(prefix)), None)


def _earlier_note(memory: Memory, oid: str) -> str:
    earlier = _earlier(memory, oid)
    return f" (From your earlier conversation about {oid}: {earlier}.)" if earlier else ""


class TicketPolicy:
    """Look the order up, then act according to the ticket. Implements `AgentPolicy`."""

    def next(self, memory: Memory, rng: random.Random) -> Intent:
        ticket = (_TICKET_RE.findall(memory.task) or ["T-0"])[0]
        oid = (_ORDER_RE.findall(memory.task) or ["unknown"])[0]
        kind = _kind(memory.task)
        # A side effect that was recorded but not executed (shadow mode) counts as done: the model
        # was told so and moves on, as real models do.
        resolved = memory.last_ok("resolve_ticket") is not None or memory.recorded("resolve_ticket")
        escalation = memory.last_ok("escalate_to_human")
        if escalation is None and memory.recorded("escalate_to_human"):
            escalation = {"escalation_id": "pending"}

        if kind == "legal_threat":
            if memory.offers(TRANSFER_TOOL):
                return Act(TRANSFER_TOOL, {"reason": f"legal threat about order {oid} on ticket {ticket}"},
                           "I know the customer threatens legal action; I need a person with authority; "
                           "next action: transfer the conversation to a human.")
            if escalation is None:
                return Act("escalate_to_human", {"ticket_id": ticket, "reason": f"legal threat about order {oid}"},
                           "The customer threatens legal action; this needs a human.")
            return Answer(f"I'm sorry for the trouble. I have escalated ticket {ticket} to a senior colleague "
                          f"({escalation['escalation_id']}); you will hear from us within 4 hours.",
                          "Escalated; tell the customer.")

        order = memory.last_ok("query_order")
        if order is None or not isinstance(order, dict):
            if memory.not_found("query_order"):
                if not resolved:
                    return Act("resolve_ticket", {"ticket_id": ticket, "resolution": f"order {oid} not found; asked "
                               "the customer to confirm the order number"}, "The order does not exist.")
                return Answer(f"I could not find an order {oid}. Could you double-check the order number "
                              "on your confirmation email?", "Ask for the right order number.")
            vague = LOGISTICS_V1 not in memory.system
            if kind == "where_is" and vague and not memory.tried("query_logistics") and rng.random() < 0.8:
                return Act("query_logistics", {"tracking_number": oid},
                           "The customer wants shipping info; the shipping lookup should find it.")
            return Act("query_order", {"order_id": oid}, f"First I need the details of order {oid}.")

        if kind == "refund":
            return self._refund(memory, ticket, order, resolved, escalation)
        return self._where_is(memory, ticket, order, resolved)

    def _where_is(self, memory: Memory, ticket: str, order: dict, resolved: bool) -> Intent:
        oid, status = order["order_id"], order["status"]
        if status == "processing":
            summary = f"Your order {oid} has not shipped yet (not shipped yet: it is being prepared)."
        elif status == "delivered":
            summary = f"Your order {oid} was delivered according to our records."
        else:
            shipment = next((r for a, r in memory.ok_results("query_logistics")
                             if a.get("tracking_number") == order["tracking_number"]), None)
            if shipment is None:
                return Act("query_logistics", {"tracking_number": order["tracking_number"]},
                           f"Order {oid} shipped; let me ask the carrier.")
            late = " It is delayed at the carrier, sorry." if shipment["status"] == "delayed" else ""
            summary = (f"Your order {oid} is on its way with {shipment['carrier']}; expected delivery {shipment['eta']}."
                       f"{late}")
            if late:
                fact = f"shipment delayed at {shipment['carrier']}, ETA {shipment['eta']} (ticket {ticket})"
                if (keep := _remember(memory, oid, fact)) is not None and resolved:
                    return keep
        if not resolved:
            return Act("resolve_ticket", {"ticket_id": ticket, "resolution": summary}, "I have the facts; close it.")
        return Answer(summary + _earlier_note(memory, oid), "Ticket resolved; answer the customer.")

    def _refund(self, memory: Memory, ticket: str, order: dict, resolved: bool, escalation: Any) -> Intent:
        oid = order["order_id"]
        refund = memory.last_ok("create_refund_request")
        refused = memory.failed("create_refund_request", ToolErrorCode.DENIED, ToolErrorCode.EXCEPTION)
        if refund is None and memory.recorded("create_refund_request"):
            return Answer(f"Your refund request for order {oid} has been recorded and is awaiting review; "
                          "we will confirm by email.", "The refund is recorded for review.")
        earlier = _earlier(memory, oid)
        if refund is None and refused is None and earlier is not None and "refund R-" in earlier:
            # Long-term memory: this customer's refund for the order was submitted in an earlier
            # conversation; a second one would pay twice.
            text = (f"A refund for order {oid} was already submitted in an earlier conversation ({earlier}); "
                    "it reaches your card in 3-5 business days.")
            if not resolved:
                return Act("resolve_ticket", {"ticket_id": ticket, "resolution": text},
                           "I remember the refund was already submitted; close this duplicate ticket.")
            return Answer(text, "Tell the customer the refund is on its way.")
        if refund is None and refused is None:
            return Act("create_refund_request", {"order_id": oid, "amount_usd": order["total_usd"],
                                                 "reason": f"{order['item']} arrived damaged"},
                       "Damaged on arrival: refund the full amount.")
        if refund is not None:
            text = (f"I have submitted a refund of ${refund['amount_usd']:.2f} for order {oid} "
                    f"({refund['refund_id']}); it reaches your card in 3-5 business days.")
            if not resolved:
                return Act("resolve_ticket", {"ticket_id": ticket, "resolution": text}, "Refund done; close it.")
            fact = f"refund {refund['refund_id']} of ${refund['amount_usd']:.2f} submitted (ticket {ticket})"
            if (keep := _remember(memory, oid, fact)) is not None:
                return keep
            return Answer(text, "Tell the customer.")
        if escalation is None:
            return Act("escalate_to_human", {"ticket_id": ticket, "reason": f"refund for {oid} needs approval"},
                       "The refund was not approved automatically; a human must decide.")
        fact = f"refund needs approval, escalated as {escalation['escalation_id']} (ticket {ticket})"
        if (keep := _remember(memory, oid, fact)) is not None:
            return keep
        return Answer(f"Your refund request for order {oid} has been escalated to a colleague who can approve "
                      f"it ({escalation['escalation_id']}); you will hear from us within 4 hours."
                      + _earlier_note(memory, oid), "Escalated; tell the customer.")

    def made_up_answer(self, memory: Memory, rng: random.Random) -> str:
        oid = (_ORDER_RE.findall(memory.task) or ["your order"])[0]
        return rng.choice((f"Your order {oid} is on its way and should arrive in 2-3 business days.",
                           f"I have processed your request for {oid}; everything is taken care of."))
