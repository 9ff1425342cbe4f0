"""What an evaluator sees of a run: its RUN facts, task, answer, steps and tool calls, read through the store's queries.

Why one view for every evaluator: the built-ins and the judge must judge the same run the trace page
shows, whatever client sent it, so the reading (kernel attributes first, the OpenInference
`input.value` / `output.value` of a foreign client's top span after) lives here once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ingest.store.backend import DUCKDB_QUERIES
from tracer import conventions as c


@dataclass(frozen=True)
class ToolCall:
    name: str
    ok: bool
    error_type: str | None
    arguments: Any = None
    result: Any = None


@dataclass(frozen=True)
class StepView:
    index: int
    action: str | None
    thought: str | None
    observation: str | None


@dataclass(frozen=True)
class RunView:
    project: str
    trace_id: str
    agent: str | None
    version: str | None
    mode: str | None
    ok: bool | None
    stop_reason: str | None
    steps: int | None
    cost_usd: float | None
    duration_ms: float | None
    start_time: datetime | None
    task: str | None
    answer: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    step_views: list[StepView] = field(default_factory=list)

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tool_calls]


def _attrs(row: dict[str, Any]) -> dict[str, Any]:
    raw = row.get("attributes")
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, default=str)


def load_run_view(cur: Any, project: str, trace_id: str, queries: Any = DUCKDB_QUERIES) -> RunView | None:
    """The run of `trace_id` in `project` with its spans; None when the store has no such run.
    `queries`: the store's read queries (`queries_of(store)`), DuckDB's by default."""
    runs = queries.runs.find_runs_by_trace(cur, trace_id, frozenset({project}))
    if not runs:
        return None
    run = runs[0]
    rows = queries.traces.trace_spans(cur, trace_id, project, run["span_start"], run["span_end"], run["span_count"]).rows
    root = next((r for r in rows if r["span_id"] == run.get("root_span_id")), None)
    root_attrs = _attrs(root) if root is not None else {}
    task = root_attrs.get(c.RUN_TASK, root_attrs.get(c.OI_INPUT_VALUE))
    answer = root_attrs.get(c.RUN_ANSWER, root_attrs.get(c.OI_OUTPUT_VALUE))
    tools, steps = [], []
    for row in rows:
        attrs = _attrs(row)
        if row["operation"] == c.OperationClass.TOOL.value and row.get("tool_name"):
            tools.append(ToolCall(
                name=row["tool_name"],
                ok=row["status"] != "ERROR" and row.get("error_type") is None,
                error_type=row.get("error_type"),
                arguments=attrs.get(c.GEN_AI_TOOL_CALL_ARGUMENTS, attrs.get(c.OI_INPUT_VALUE)),
                result=attrs.get(c.GEN_AI_TOOL_CALL_RESULT, attrs.get(c.OI_OUTPUT_VALUE)),
            ))
        elif row["operation"] == c.OperationClass.STEP.value and row.get("step_index") is not None:
            steps.append(StepView(
                index=int(row["step_index"]),
                action=_text(attrs.get(c.STEP_ACTION)),
                thought=_text(attrs.get(c.STEP_THOUGHT)),
                observation=_text(attrs.get(c.STEP_OBSERVATION)),
            ))
    steps.sort(key=lambda s: s.index)
    return RunView(
        project=project, trace_id=trace_id, agent=run["agent"], version=run["version"], mode=run["mode"],
        ok=run["ok"], stop_reason=run["stop_reason"], steps=run["steps"], cost_usd=run["cost_usd"],
        duration_ms=run["duration_ms"], start_time=run["start_time"], task=_text(task), answer=_text(answer),
        tool_calls=tools, step_views=steps,
    )
