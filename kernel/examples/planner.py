"""Cost-comparison planner (plan-and-execute): compare three vendors' per-seat prices.

Acme Cloud and Birch Systems publish price lists; Cobalt Hosting does not, so the first plan's
`fetch_price_list("cobalt")` step fails with a structured `no_public_price_list` error and the
run must replan: the replacement asks Cobalt's sales desk (`request_quote`, a paid call) and the
final `pick_cheapest` step is re-pointed at the quote.

The simulated model (`PlannerLLM`) writes the planner's and replanner's JSON from what the
prompts show it (the tool descriptions, the failure block, the remaining plan), so the versions
really behave differently:
- v1: `request_quote` says it is for vendors without a public price list. One patch replan.
- v2: `request_quote` is described vaguely ("Contact a vendor."). The replanner first tries
  `search_web`, whose snippets carry no price; the step's output check fails (an assumption
  failure, routed to a tail replan) and only the second replan asks for a quote: one more replan,
  more planner tokens and cost per run.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections import Counter
from typing import Annotated, Any

from pydantic import Field

from kernel.budgets import Budget
from kernel.examples.data import Task
from kernel.examples.faults import FaultRates
from kernel.llm.base import LLMError
from kernel.plan.prompts import PLANNER_SYSTEM, REPLANNER_SYSTEM
from kernel.tokens import estimate_messages_tokens, estimate_tokens
from kernel.tools import Tool, tool
from kernel.types import LLMResponse, Message, Usage

AGENT = "planner"
MODEL = "gpt-4o-mini"
RESPONSE_MODEL = "gpt-4o-mini-2024-07-18"
FALLBACK_MODEL = "gpt-4.1-mini"
PROVIDER = "openai"
BUDGET = Budget(max_steps=14, max_input_tokens=30_000)

QUOTE_V1 = "Ask a vendor's sales desk for a per-seat price quote; for vendors without a public price list."
QUOTE_V2 = "Contact a vendor."
VERSIONS = {
    "v1": "request_quote says it is for vendors without a public price list (one replan)",
    "v2": "request_quote is described vaguely; the replanner tries search_web first (two replans)",
}

VENDORS = {"acme": "Acme Cloud", "birch": "Birch Systems", "cobalt": "Cobalt Hosting"}
PRICE_LISTS = {"acme": 14.0, "birch": 12.5}  # USD per seat per month; Cobalt has none
QUOTES = {"acme": 13.5, "birch": 12.0, "cobalt": 11.75}
_PRICE_SCHEMA = {"type": "object", "required": ["unit_price_usd"]}


class NoPublicPriceList(LookupError):  # noqa: N818 - reads as the condition the model sees
    """Structured: `{"error": "no_public_price_list", "vendor": ..., "hint": ...}`."""

    def __init__(self, vendor: str) -> None:
        super().__init__(json.dumps({"error": "no_public_price_list", "vendor": vendor,
                                     "hint": "this vendor sells through its sales desk only"}))


def _vendor(name: str) -> str:
    key = name.strip().lower().split()[0] if name.strip() else ""
    if key not in VENDORS:
        raise LookupError(json.dumps({"error": "unknown_vendor", "vendor": name, "known": sorted(VENDORS)}))
    return key


def build_tools(version: str) -> list[Tool]:
    @tool(description="The vendor's public price list: per-seat monthly price (acme, birch, cobalt).")
    async def fetch_price_list(vendor: Annotated[str, Field(description="acme, birch or cobalt")]) -> dict:
        key = _vendor(vendor)
        if key not in PRICE_LISTS:
            raise NoPublicPriceList(key)
        return {"vendor": key, "unit_price_usd": PRICE_LISTS[key], "unit": "seat/month", "source": "price list"}

    @tool(description=QUOTE_V1 if version == "v1" else QUOTE_V2, price_usd=0.05)
    async def request_quote(vendor: str, seats: Annotated[int, Field(ge=1)]) -> dict:
        key = _vendor(vendor)
        return {"vendor": key, "unit_price_usd": QUOTES[key], "seats": seats, "unit": "seat/month", "source": "quote"}

    @tool(description="Search the web; returns titles and snippets.", price_usd=0.005)
    async def search_web(query: str) -> dict:
        name = next((v for k, v in VENDORS.items() if k in query.lower()), "the vendor")
        return {"results": [
            {"title": f"{name} pricing - reviews", "snippet": f"Pricing for {name} is available on request."},
            {"title": f"Is {name} worth it?", "snippet": "Users report discounts for larger teams."},
        ]}

    @tool(description="Pick the cheapest of several offers ({vendor, unit_price_usd}).")
    async def pick_cheapest(offers: list[dict[str, Any]]) -> dict:
        priced = [o for o in offers if isinstance(o, dict) and isinstance(o.get("unit_price_usd"), int | float)]
        if len(priced) < len(offers):
            raise ValueError(f"{len(offers) - len(priced)} offer(s) without unit_price_usd")
        ranking = sorted(priced, key=lambda o: o["unit_price_usd"])
        best = ranking[0]
        return {"vendor": best["vendor"], "name": VENDORS.get(best["vendor"], best["vendor"]),
                "unit_price_usd": best["unit_price_usd"],
                "ranking": [f"{o['vendor']} {o['unit_price_usd']:.2f}" for o in ranking]}

    return [fetch_price_list, request_quote, search_web, pick_cheapest]


def sample_task(rng: random.Random) -> Task:
    seats = rng.choice((10, 25, 40, 80, 150))
    order = list(VENDORS.values())
    rng.shuffle(order)
    text = (f"Compare the monthly per-seat price of {', '.join(order)} for {seats} seats and recommend "
            "the cheapest vendor.")
    return Task(AGENT, "compare", text, ("Cobalt Hosting", "11.75"))


# ---- the simulated planner -------------------------------------------------------------------

_SEATS_RE = re.compile(r"for (\d+) seats")
_REPLACE_RE = re.compile(r"^(E\d+) \[replace\] (\w+)\((.*)\)(?: depends_on: [^:]*)?: ")


class PlannerLLM:
    """Implements `LLM` for the planner: plan, replan and solver replies, deterministic per seed.
    Faults used: `outage` (provider error), `unparsable` (a broken plan, which the agent re-asks
    for), `format_jitter` (the JSON in a code fence, which the parser accepts)."""

    def __init__(self, *, seed: int | str = 0, faults: FaultRates | None = None, model: str = MODEL,
                 response_model: str = RESPONSE_MODEL, provider: str = PROVIDER) -> None:
        self.rng = random.Random(f"planner:{seed}")
        self.faults = faults or FaultRates()
        self.model, self.response_model, self.provider = model, response_model, provider
        self.injected: Counter[str] = Counter()
        self.calls = 0

    def _draw(self, fault: str) -> bool:
        rate = getattr(self.faults, fault)
        hit = rate > 0 and self.rng.random() < rate
        if hit:
            self.injected[fault] += 1
        return hit

    async def complete(self, messages: list[Message], tools: list[dict] | None = None, *,
                       temperature: float | None = None, max_tokens: int | None = None, **_: Any) -> LLMResponse:
        self.calls += 1
        await asyncio.sleep(0)
        if self._draw("outage"):
            raise LLMError("Rate limit reached for requests", error_type="rate_limit_exceeded", retryable=True,
                           status_code=429, retry_after=1.0)
        system = next((m.content or "" for m in messages if m.role == "system"), "")
        user = next((m.content or "" for m in messages if m.role == "user"), "")
        if system.startswith(PLANNER_SYSTEM):
            text = self._plan(user)
        elif system.startswith(REPLANNER_SYSTEM):
            text = self._replan(system, user)
        else:
            text = self._solve(user)
        if text.startswith("{"):  # plan or replan JSON
            if self._draw("unparsable"):
                text = text[: len(text) // 2]
            elif self._draw("format_jitter"):
                text = f"Here is the plan:\n```json\n{text}\n```"
        prompt = estimate_messages_tokens(messages)
        return LLMResponse(text=text, model=self.response_model, provider=self.provider, finish_reason="stop",
                           usage=Usage(input_tokens=prompt, output_tokens=estimate_tokens(text)))

    @staticmethod
    def _plan(goal: str) -> str:
        found = sorted(VENDORS, key=lambda k: goal.find(VENDORS[k]) if VENDORS[k] in goal else 99)
        steps = [{"id": f"E{i}", "action": f"price list of {VENDORS[k]}", "tool": "fetch_price_list",
                  "args": {"vendor": k}, "expect": _PRICE_SCHEMA} for i, k in enumerate(found, start=1)]
        steps.append({"id": "E4", "action": "pick the cheapest offer", "tool": "pick_cheapest",
                      "args": {"offers": ["#E1", "#E2", "#E3"]}})
        return json.dumps({"steps": steps, "answer": "Cheapest: #E4.name at $#E4.unit_price_usd per seat/month "
                                                     "(ranking: #E4.ranking)."})

    @staticmethod
    def _replan(system: str, user: str) -> str:
        seats = int(m.group(1)) if (m := _SEATS_RE.search(user)) else 1
        remaining = user.split("## Remaining plan\n", 1)[-1].splitlines()
        replace = [(m.group(1), m.group(2), m.group(3)) for line in remaining if (m := _REPLACE_RE.match(line))]
        lessons = user.split("## Failure\n", 1)[-1].split("## Remaining plan", 1)[0]
        quote_known = QUOTE_V1 in system
        steps: list[dict] = []
        new_ids: dict[str, str] = {}
        for n, (old, tool_name, raw) in enumerate(replace, start=1):
            try:
                args = json.loads(raw)
            except ValueError:
                args = {}
            if tool_name == "pick_cheapest":
                continue
            vendor = args.get("vendor") or next((k for k in VENDORS if k in json.dumps(args).lower()), "cobalt")
            label = f"R{n}"
            new_ids[old] = label
            if quote_known or "search_web" in lessons:
                steps.append({"id": label, "action": f"quote from {VENDORS[vendor]}", "tool": "request_quote",
                              "args": {"vendor": vendor, "seats": seats}, "replaces": old, "expect": _PRICE_SCHEMA})
            else:
                steps.append({"id": label, "action": f"find {VENDORS[vendor]}'s price online", "tool": "search_web",
                              "args": {"query": f"{vendor} price per seat"}, "replaces": old,
                              "expect": _PRICE_SCHEMA})
        for old, tool_name, raw in replace:
            if tool_name != "pick_cheapest":
                continue
            try:
                offers = json.loads(raw).get("offers", [])
            except ValueError:
                offers = []
            offers = [f"#{new_ids[o.lstrip('#')]}" if o.lstrip("#") in new_ids else o for o in offers]
            steps.append({"id": "P1", "action": "pick the cheapest offer", "tool": "pick_cheapest",
                          "args": {"offers": offers}, "replaces": old})
        return json.dumps({"cause": "a vendor has no public price list", "steps": steps,
                           "answer": "Cheapest: #P1.name at $#P1.unit_price_usd per seat/month (ranking: #P1.ranking)."})

    @staticmethod
    def _solve(user: str) -> str:
        return "From the evidence gathered: " + " ".join(user.split("## Evidence\n", 1)[-1].split())[:400]
