"""Real tools (through the real `@tool` decorator and dispatch) and plan-JSON helpers for the
plan-and-execute tests. A `World` keeps per-test state: which tools were called, with what."""

from __future__ import annotations

import json
from typing import Any

from kernel.plan import GoalInbox
from kernel.tools import ToolRegistry, tool

LONG_TAIL = "SECRET-TAIL-OF-THE-OBSERVATION"


def plan_json(*steps: dict[str, Any], answer: str | None = None, **extra: Any) -> str:
    body: dict[str, Any] = {"steps": list(steps)}
    if answer is not None:
        body["answer"] = answer
    body.update(extra)
    return json.dumps(body)


def step(sid: str, tool_name: str, args: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": sid, "action": f"run {tool_name}", "tool": tool_name, "args": args or {}, **extra}


class World:
    def __init__(self, *, quote_timeouts: int = 0) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.quote_timeouts = quote_timeouts
        self.inbox = GoalInbox()
        self.change_goal_to: str | None = None

    def called(self, name: str) -> int:
        return sum(1 for n, _ in self.calls if n == name)

    def registry(self) -> ToolRegistry:
        world = self

        @tool
        async def get_orders(customer: str) -> dict:
            """Orders of a customer."""
            world.calls.append(("get_orders", {"customer": customer}))
            if customer.startswith("ghost"):
                raise ValueError(f"no customer named {customer!r}")
            return {"rows": [{"id": 1, "total": 30}, {"id": 2, "total": 12}]}

        @tool
        async def search_orders(name: str) -> dict:
            """Orders by fuzzy customer name."""
            world.calls.append(("search_orders", {"name": name}))
            return {"rows": [{"id": 7, "total": 5}]}

        @tool
        async def sum_totals(rows: list) -> dict:
            """Sum the `total` of rows."""
            world.calls.append(("sum_totals", {"rows": rows}))
            return {"total": sum(r["total"] for r in rows)}

        @tool
        async def report(total: int, customer: str = "") -> str:
            """Write the report line."""
            world.calls.append(("report", {"total": total, "customer": customer}))
            if world.change_goal_to is not None:
                world.inbox.change(world.change_goal_to)
                world.change_goal_to = None
            return f"{customer} spent {total}"

        @tool(price_usd=0.01)
        async def quote(symbol: str) -> dict:
            """Live price (flaky)."""
            world.calls.append(("quote", {"symbol": symbol}))
            if world.quote_timeouts > 0:
                world.quote_timeouts -= 1
                raise TimeoutError("upstream did not answer")
            return {"price": 10}

        @tool
        async def backup_quote(symbol: str) -> dict:
            """Delayed price."""
            world.calls.append(("backup_quote", {"symbol": symbol}))
            return {"price": 11}

        @tool(price_usd=0.5)
        async def load_dataset(name: str) -> dict:
            """Load a dataset (expensive)."""
            world.calls.append(("load_dataset", {"name": name}))
            return {"name": name, "year": 2019, "rows": [1, 2, 3]}

        @tool
        async def verify_year(year: int) -> dict:
            """Check the data is from the year the plan needs."""
            world.calls.append(("verify_year", {"year": year}))
            if year != 2024:
                raise ValueError(f"data is from {year}, not 2024")
            return {"ok": True}

        @tool
        async def big_page(url: str) -> str:
            """Fetch a page."""
            world.calls.append(("big_page", {"url": url}))
            return "HEAD " + "lorem ipsum " * 200 + LONG_TAIL

        @tool(side_effect=True)
        async def delete_account(customer: str) -> str:
            """Delete an account (side effect)."""
            world.calls.append(("delete_account", {"customer": customer}))
            return "deleted"

        return ToolRegistry(
            [get_orders, search_orders, sum_totals, report, quote, backup_quote, load_dataset, verify_year,
             big_page, delete_account]
        )
