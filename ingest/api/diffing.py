"""Step alignment of two runs: pure functions over the step/tool span rows of each run.

Why by step index: a run's step index is what the kernel logs and what a user reads in the trace
view; aligning by index shows exactly where a re-run (new prompt, new model, new version) started
to behave differently. Foreign clients without step spans get one step per tool call, in order.
Arguments are compared as parsed JSON, so key order and whitespace are not differences.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tracer.conventions import OperationClass as Op

FIELDS = ("action", "arguments", "observation")


@dataclass(frozen=True)
class StepFacts:
    action: str | None
    arguments: Any
    observation: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"action": self.action, "arguments": self.arguments, "observation": self.observation}


def _json_or_text(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _one_or_list(values: list[Any]) -> Any:
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def run_steps(rows: list[dict[str, Any]]) -> dict[int, StepFacts]:
    """Step index -> facts, from one run's step and tool spans (ingest.queries.diff.step_spans)."""
    steps = [r for r in rows if r["operation"] == Op.STEP.value]
    tools = [r for r in rows if r["operation"] == Op.TOOL.value]
    out: dict[int, StepFacts] = {}
    if not steps:
        for i, tool in enumerate(tools):
            out[i] = StepFacts(tool["tool_name"], _json_or_text(tool["arguments"]), tool["result"])
        return out
    by_parent: dict[str, list[dict[str, Any]]] = {}
    for tool in tools:
        by_parent.setdefault(tool["parent_span_id"], []).append(tool)
    for position, step in enumerate(steps):
        index = step["step_index"] if step["step_index"] is not None else position
        if index in out:  # a repeated index (a retried step) keeps its first occurrence
            continue
        kids = by_parent.get(step["span_id"], [])
        action = step["action"] or _one_or_list([k["tool_name"] for k in kids]) or step["step_kind"]
        arguments = _one_or_list([_json_or_text(k["arguments"]) for k in kids if k["arguments"] is not None])
        observation = step["observation"]
        if observation is None:
            results = [k["result"] for k in kids if k["result"] is not None]
            observation = "\n".join(results) if results else None
        out[int(index)] = StepFacts(str(action) if action is not None else None, arguments, observation)
    return out


def align(a: dict[int, StepFacts], b: dict[int, StepFacts]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Aligned steps and the first divergence: the lowest index where a field differs, the field
    being the first of action, arguments, observation that differs (a missing step differs in action)."""
    steps: list[dict[str, Any]] = []
    first: dict[str, Any] | None = None
    for index in sorted(set(a) | set(b)):
        sa, sb = a.get(index), b.get(index)
        differing: str | None = None
        if sa is None or sb is None:
            differing = "action"
        else:
            differing = next((f for f in FIELDS if getattr(sa, f) != getattr(sb, f)), None)
        steps.append(
            {
                "index": index,
                "a": sa.as_dict() if sa else None,
                "b": sb.as_dict() if sb else None,
                "same": differing is None,
            }
        )
        if differing is not None and first is None:
            first = {
                "step": index,
                "field": differing,
                "a": getattr(sa, differing) if sa else None,
                "b": getattr(sb, differing) if sb else None,
            }
    return steps, first
