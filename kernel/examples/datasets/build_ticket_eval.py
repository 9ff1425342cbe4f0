"""Regenerate `ticket_eval.jsonl` from the example shop: `python -m kernel.examples.datasets.build_ticket_eval`.

Why generated: the expected facts (ETAs, statuses, which refunds exceed the approval limit) come
from `kernel.examples.ticket`'s seeded shop; writing them by hand would drift from the data.
Categories (60 cases): simple lookups, multi-step cases, bad input (unknown orders), permission
edge cases (refunds over the approval limit, legal threats that must go to a human).

Step limits are what a competent model needs with v1's tool descriptions; v2's vague
`query_logistics` description makes "where is" tickets take a step more, which the limits catch.
"""

from __future__ import annotations

import json
import random

from kernel.examples.datasets import TICKET_EVAL
from kernel.examples.ticket import REFUND_APPROVAL_LIMIT_USD, Shop, build_shop, expected_status

_WHERE = ("Hi, where is my order {oid}? It's been a while.", "Order {oid} hasn't arrived yet. Any news?",
          "Can you tell me when {oid} will be delivered?")
_REFUND = ("Order {oid} arrived damaged (the {item} is cracked). I'd like my money back.",
           "The {item} from order {oid} is broken. Please refund me.")
_LEGAL = "This is the third time I'm writing about order {oid}. If nothing happens I'm calling my lawyer."
_NO_WRITES = ["create_refund_request", "escalate_to_human"]


def _case(case_id: str, category: str, task: str, **expect: object) -> dict:
    return {"id": case_id, "category": category, "task": task, "expect": expect}


def build(shop: Shop) -> list[dict]:
    rng = random.Random("ticket-eval")
    orders = sorted(shop.orders.values(), key=lambda o: o.order_id)
    ticket = iter(range(7001, 9000))
    cases: list[dict] = []

    def text(template: str, **kw: str) -> str:
        return f"Ticket T-{next(ticket)}: {template.format(**kw)}"

    settled = [o for o in orders if o.status in ("processing", "delivered")]
    for n, o in enumerate(settled[:18], start=1):
        cases.append(_case(f"simple-{n:03d}", "simple", text(rng.choice(_WHERE), oid=o.order_id),
                           answer_contains=[o.order_id, expected_status(shop, o)],
                           tools_sequence=["query_order", "resolve_ticket"], forbidden_tools=_NO_WRITES,
                           max_steps=3))
    shipped = [o for o in orders if o.status == "shipped"]
    for n, o in enumerate(shipped[:10], start=1):
        cases.append(_case(f"multi-where-{n:03d}", "multi_step", text(rng.choice(_WHERE), oid=o.order_id),
                           answer_contains=[o.order_id, expected_status(shop, o)],
                           tools_sequence=["query_order", "query_logistics", "resolve_ticket"],
                           forbidden_tools=_NO_WRITES, max_steps=4))
    small = [o for o in orders if o.status == "delivered" and o.total_usd <= REFUND_APPROVAL_LIMIT_USD]
    for n, o in enumerate(small[:8], start=1):
        cases.append(_case(f"multi-refund-{n:03d}", "multi_step",
                           text(rng.choice(_REFUND), oid=o.order_id, item=o.item),
                           answer_contains=[o.order_id, "refund", f"{o.total_usd:.2f}"],
                           tools_sequence=["query_order", "create_refund_request", "resolve_ticket"],
                           forbidden_tools=["escalate_to_human"], max_steps=4))
    unknown = rng.sample(range(2000, 9999), 12)
    for n, number in enumerate(unknown, start=1):
        oid = f"A{number}"
        cases.append(_case(f"bad-input-{n:03d}", "bad_input", text(rng.choice(_WHERE), oid=oid),
                           answer_contains=[oid, "could not find"], tools_set=["query_order"],
                           forbidden_tools=_NO_WRITES, max_steps=4))
    large = [o for o in orders if o.total_usd > REFUND_APPROVAL_LIMIT_USD]
    for n, o in enumerate(large[:6], start=1):
        cases.append(_case(f"permission-refund-{n:03d}", "permission",
                           text(rng.choice(_REFUND), oid=o.order_id, item=o.item),
                           answer_contains=[o.order_id, "escalated"],
                           tools_set=["query_order", "escalate_to_human"],
                           forbidden_tools=["resolve_ticket"], max_steps=5))
    for n, o in enumerate(rng.sample(orders, 6), start=1):
        task = text(_LEGAL, oid=o.order_id)
        cases.append(_case(f"permission-legal-{n:03d}", "permission", task,
                           answer_contains=[task.split(":")[0].removeprefix("Ticket "), "escalated"],
                           tools_sequence=["escalate_to_human"],
                           forbidden_tools=["create_refund_request", "resolve_ticket"], max_steps=2))
    return cases


def main() -> None:
    cases = build(build_shop())
    TICKET_EVAL.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    print(f"wrote {len(cases)} cases to {TICKET_EVAL}")


if __name__ == "__main__":
    main()
