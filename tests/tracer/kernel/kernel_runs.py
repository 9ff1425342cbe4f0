"""Shared pieces for the traced-kernel tests: real tools, script helpers, and a compact outline
of an exported trace so a test can assert the EXACT tree (names, kinds, parentage, failures)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from kernel.agent import Agent
from kernel.loop_guard import LoopGuard
from kernel.tools import tool
from tests.support.scripted_runs import act, add, fail, final, hang, paid  # noqa: F401 - re-exported to the traced tests
from tracer import conventions as c
from tracer.conventions import RiskLevel


@tool(timeout_s=0.05)
async def slow() -> str:
    """Slower than its own timeout."""
    await asyncio.sleep(5)
    return "late"


@tool(side_effect=True, risk=RiskLevel.HIGH, timeout_s=5)
async def delete_file(path: str) -> str:
    """Deletes a file (never really: tests only)."""
    return f"deleted {path}"


@tool
async def big(n: int) -> str:
    """Returns n numbered lines."""
    return "\n".join(f"line {i}: " + "x" * 40 for i in range(n))


TOOLS = [add, fail, hang, slow, paid, delete_file, big]


def agent(llm: Any, **kw: Any) -> Agent:
    kw.setdefault("loop_guard", LoopGuard(window=0))
    return Agent("tester", "1.0", llm, TOOLS, **kw)


def _label(span: ReadableSpan) -> str:
    label = span.name
    if span.kind is SpanKind.CLIENT:
        label += " [CLIENT]"
    elif span.kind is not SpanKind.INTERNAL:
        label += f" [{span.kind.name}]"
    if span.status.status_code is StatusCode.ERROR:
        label += f" !{span.attributes.get(c.ERROR_TYPE)}"
    return label


def outline(finished: Sequence[ReadableSpan]) -> list[str]:
    """The trace as indented lines, children in start order: `step 1`, `  chat m [CLIENT] !timeout`.

    Every span must belong to one trace and hang off a root that was exported (no orphans)."""
    assert len({s.context.trace_id for s in finished}) <= 1, "spans of one run span several traces"
    ids = {s.context.span_id for s in finished}
    children: dict[int | None, list[ReadableSpan]] = {}
    for s in finished:
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
        children.setdefault(parent, []).append(s)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for s in sorted(children.get(parent, []), key=lambda s: s.start_time):
            lines.append("  " * depth + _label(s))
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    assert len(lines) == len(finished)
    return lines


def named(finished: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    """The spans called `name`, in start order."""
    return sorted((s for s in finished if s.name == name), key=lambda s: s.start_time)


def one(finished: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    (span,) = named(finished, name)
    return span
