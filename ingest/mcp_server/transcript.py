"""A trace as a compact step-by-step transcript: what an LLM needs to debug a run, in few tokens.

Why text and not the span JSON: a trace's JSON repeats ids, timestamps and attribute names on every
span and is 10-50x longer than what it says. The transcript keeps one line per meaningful span, in
tree order (indented by depth), with the content that explains behaviour: the task and answer, each
step's thought, the LLM calls (model, tokens, latency), each tool call's arguments and result, and
every error with its message. Long values are cut to `field_chars` with the cut marked; the whole
transcript is paged by line (ingest/mcp_server/paging.py), so any trace can be read to its end.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from ingest.mcp_server.paging import clip
from tracer import conventions as c
from tracer.conventions import OperationClass as Op


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return " ".join(value.split())
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _ms(value: Any) -> str:
    if not isinstance(value, int | float):
        return ""
    return f"{value / 1000:.2f}s" if value >= 1000 else f"{value:.0f}ms"


def _error(span: dict[str, Any]) -> str:
    if span.get("status") != "ERROR" and not span.get("error_type"):
        return ""
    parts = [p for p in (span.get("error_type"), span.get("status_message")) if p]
    for event in span.get("events") or []:
        if event.get("name") == c.EXCEPTION_EVENT:
            attrs = event.get("attributes") or {}
            exc = ": ".join(_text(attrs.get(k)) for k in (c.EXCEPTION_TYPE, c.EXCEPTION_MESSAGE) if attrs.get(k))
            if exc and exc not in parts:
                parts.append(exc)
            break
    return "  ERROR " + " | ".join(str(p) for p in parts) if parts else "  ERROR"


def _first(attrs: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if attrs.get(key) not in (None, ""):
            return attrs[key]
    return None


def _span_lines(span: dict[str, Any], field_chars: int) -> list[str]:
    """One line for the span, plus indented content lines."""
    attrs = span.get("attributes") or {}
    op = span.get("operation")
    err = _error(span)

    def cut(v: Any) -> str:
        return clip(_text(v), field_chars)

    if op in (Op.AGENT, Op.WORKFLOW):
        lines = [f"agent {span.get('name')} {_ms(span.get('duration_ms'))}{err}"]
        task = _first(attrs, c.RUN_TASK, c.OI_INPUT_VALUE)
        answer = _first(attrs, c.RUN_ANSWER, c.OI_OUTPUT_VALUE)
        lines += [f"  task: {cut(task)}"] if task is not None else []
        lines += [f"  answer: {cut(answer)}"] if answer is not None else []
        return lines
    if op == Op.STEP:
        lines = [f"{span.get('name')}{err}"]
        for label, key in (("thought", c.STEP_THOUGHT), ("observation", c.STEP_OBSERVATION)):
            if attrs.get(key) is not None:
                lines.append(f"  {label}: {cut(attrs[key])}")
        return lines
    if op == Op.LLM:
        tokens = f" tokens {span.get('input_tokens') or 0}->{span.get('output_tokens') or 0}"
        cost = f" ${span['cost_usd']:.4g}" if isinstance(span.get("cost_usd"), int | float) else ""
        lines = [f"llm {span.get('model') or span.get('name')} {_ms(span.get('duration_ms'))}{tokens}{cost}{err}"]
        output = _first(attrs, c.GEN_AI_OUTPUT_MESSAGES, c.OI_OUTPUT_VALUE)
        lines += [f"  output: {cut(output)}"] if output is not None else []
        return lines
    if op == Op.TOOL:
        args = _first(attrs, c.GEN_AI_TOOL_CALL_ARGUMENTS, c.OI_INPUT_VALUE)
        result = _first(attrs, c.GEN_AI_TOOL_CALL_RESULT, c.OI_OUTPUT_VALUE)
        lines = [f"tool {span.get('tool_name') or span.get('name')}({cut(args)}) {_ms(span.get('duration_ms'))}{err}"]
        lines += [f"  -> {cut(result)}"] if result is not None else []
        return lines
    if op in (Op.BUDGET, Op.TRUNCATE) and not err:
        return []  # bookkeeping spans: only their failures explain anything
    return [f"{span.get('name')} ({op}) {_ms(span.get('duration_ms'))}{err}"]


def run_header(run: dict[str, Any] | None, trace_id: str) -> str:
    if not run:
        return f"trace {trace_id} (no run row)"
    cost = run.get("cost_usd")
    parts = [
        f"run {trace_id}", f"agent={run.get('agent')}", f"version={run.get('version')}", f"ok={run.get('ok')}",
        f"stop_reason={run.get('stop_reason')}", f"steps={run.get('steps')}", f"llm_calls={run.get('llm_calls')}",
        f"tool_calls={run.get('tool_calls')}", f"tool_errors={run.get('tool_errors')}",
        f"tokens={run.get('input_tokens')}->{run.get('output_tokens')}",
        f"cost=${cost:.4g}" if isinstance(cost, int | float) else "cost=?",
        f"duration={_ms(run.get('duration_ms'))}", f"start={run.get('start_time')}",
    ]
    if run.get("failure_evidence"):
        parts.append(f"failure={_text(run['failure_evidence'])}")
    return " ".join(parts)


def score_lines(trace: dict[str, Any], field_chars: int) -> list[str]:
    """One line per score of the trace (oldest first, as the API lists them): how people, judges and
    rules rated this run is often the reason it is being looked at."""
    out = []
    for score in trace.get("scores") or []:
        target = f" span {score['span_id']}" if score.get("span_id") else ""
        comment = f": {clip(_text(score['comment']), field_chars)}" if score.get("comment") else ""
        out.append(f"score {score.get('name')}={score.get('value')} ({score.get('source')}"
                   f"{', ' + str(score['author']) if score.get('author') else ''}){target}{comment}")
    return out


def transcript_lines(trace: dict[str, Any], field_chars: int) -> list[str]:
    """Every line of the transcript of `trace` (a `GET /api/traces/{id}` answer), header excluded:
    its scores, then its spans."""
    spans = trace.get("spans") or []
    ids = {s["span_id"] for s in spans}
    children: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for span in spans:
        parent = span.get("parent_span_id")
        children[parent if parent in ids else None].append(span)
    for group in children.values():
        group.sort(key=lambda s: (s.get("start_time") or "", s.get("span_id")))
    out: list[str] = score_lines(trace, field_chars)
    stack = [(s, 0) for s in reversed(children[None])]
    while stack:  # depth-first, iterative: a 10,000-span trace must not hit the recursion limit
        span, depth = stack.pop()
        out.extend("  " * depth + line for line in _span_lines(span, field_chars))
        stack.extend((child, depth + 1) for child in reversed(children.get(span["span_id"], [])))
    return out


def page_lines(header: str, lines: list[str], offset: int, budget: int) -> tuple[str, int]:
    """The header and the lines from `offset` that fit `budget` characters; how many were shown."""
    text = [header]
    used = len(header) + 1
    shown = 0
    for line in lines[offset:]:
        if used + len(line) + 1 > budget:
            break
        text.append(line)
        used += len(line) + 1
        shown += 1
    if shown == 0 and offset < len(lines):  # one line longer than the budget: cut it, move on
        line = lines[offset]
        keep = max(budget - used - 40, 50)
        text.append(f"{line[:keep]}…[+{len(line) - keep} chars]")
        shown = 1
    return "\n".join(text), shown
