"""Script lines and real tools shared by the kernel's scripted-run tests (untraced and traced), so
both suites drive the loop with the same text and the same tools."""

from __future__ import annotations

import asyncio
import json

from kernel.tools import tool


def act(name: str, **args: object) -> str:
    return f"Thought: I will use {name}.\nAction: {name}\nAction Input: {json.dumps(args)}"


def final(answer: str) -> str:
    return f"Thought: I know it.\nFinal Answer: {answer}"


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def fail(x: int) -> str:
    """Always fails."""
    raise RuntimeError(f"boom {x}")


@tool(timeout_s=60)
async def hang() -> str:
    """Never returns in time."""
    await asyncio.sleep(60)
    return "late"


@tool(price_usd=0.4)
async def paid(q: str) -> str:
    """A tool with a per-call price."""
    return f"paid result for {q}"
