"""Runs of foreign clients: steps, ok, stop reason, agent, version and per-agent counts from the whole trace.

Why a trace-level pass: our kernel's run span reports its own outcome (`steplens.run.ok`,
`.stop_reason`, `.steps`), so the load transaction can merge its runs row incrementally. Every other
client (OpenAI Agents, LangGraph, smolagents, pydantic-ai, OpenInference, OpenLLMetry, ...) reports
none of it; the facts are a function of the whole trace (which LLM span is a real model call, which
call failed last, what succeeded after it, which exception a limit raised) and spans arrive in any
order over many batches. So the writer's upkeep pass (ingest/store/upkeep.py) re-derives every
touched trace whose stop reason was not reported, from all its stored spans, and rewrites its runs
row; a trace that gets more spans later is queued again and re-derived. The rules are the contract
in design.md §3 "Runs of foreign clients"; `derive_trace` is their one implementation.

Why Python and not SQL for the rules: they are ordered, per-trace decisions over a span tree
(descendants, "nothing successful after", exception events), readable here and cheap for the
traces that need them; traces whose run span reported its outcome (the kernel's, i.e. the
benchmark's) cost nothing but one count in the pass's existing size query.

The same pass removes from `trace_spans` the LLM and tool spans that are not calls, so run_models,
tool_calls and the tool rollup count exactly what the run counts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from ingest.normalize.error_template import safe_template
from ingest.store import analytics_load
from ingest.store.run_sql import (
    FAILURE_SIGNATURE_SQL,
    ROOT_AGENT,
    ROOT_PARENTLESS,
    SOURCE_INFERRED,
    WORKFLOW_CLASS,
)
from tracer import conventions as c
from tracer.conventions import OperationClass as Op

_AGENT = Op.AGENT.value
_AGENTIC = frozenset({_AGENT, WORKFLOW_CLASS})
_LLM = Op.LLM.value
_TOOL = Op.TOOL.value
_STEP = Op.STEP.value
_OI_CHAIN = "CHAIN"

# Framework step spans that our classifier leaves as `other`: smolagents' `Step 3`.
_FRAMEWORK_STEP_NAME = re.compile(r"^Step \d+$")
# Synthetic tool spans that record no call of their own: Google ADK's `execute_tool (merged)`.
_SYNTHETIC_TOOL = "(merged"
# Span-name prefixes naming the operation, dropped when a span name is all a run's agent is called.
_NAME_PREFIXES = (f"{c.OP_INVOKE_AGENT} ", "invoke_workflow ")

# Framework limit errors -> stop reason. Matched against the exception type (its last dotted part)
# and message of any span of the run. Order matters: the first matching rule wins.
_LIMIT_RULES: tuple[tuple[re.Pattern[str], re.Pattern[str] | None, str], ...] = (
    # pydantic-ai: UsageLimitExceeded("Exceeded the total_tokens_limit of 100 ..."): a token budget,
    # unless the limit is on requests or tool calls (a step limit).
    (re.compile(r"^UsageLimitExceeded$"), re.compile(r"tokens?_limit|tokens", re.I), "token_budget"),
    (re.compile(r"^UsageLimitExceeded$"), None, "max_steps"),
    (re.compile(r"^(MaxTurnsExceeded|GraphRecursionError|AgentMaxStepsError|LlmCallsLimitExceededError)$"), None,
     "max_steps"),
    (re.compile(r"Max(imum)?(Turns|Steps|Iterations?|Iter)(Exceeded|Reached)?(Error|Exception)?$", re.I), None,
     "max_steps"),
    (re.compile(r"(TokenLimit|TokenBudget|MaxTokens)\w*$", re.I), None, "token_budget"),
    (re.compile(r"(CostBudget|BudgetExceeded)\w*$", re.I), None, "cost_budget"),
)  # fmt: skip
# Limit reached, said only in the message (LlamaIndex "Max iterations of 10 reached", CrewAI
# "Maximum iterations reached", LangGraph "Recursion limit of 25 reached").
_LIMIT_MESSAGE = re.compile(
    r"max(imum)?[ _-]?(number of )?(turns|steps|iterations?|iter)\b.*(exceeded|reached)|"
    r"(exceeded|reached) (the )?max(imum)?[ _-]?(number of )?(turns|steps|iterations?)|recursion limit of \d+ reached",
    re.I,
)
_CANCELLED = re.compile(r"Cancel", re.I)
_TIMEOUT_TYPE = re.compile(r"Timeout|TimedOut|DeadlineExceeded", re.I)
_TIMEOUT_MESSAGE = re.compile(r"timed? ?out", re.I)
_EVIDENCE_CHARS = 500
# A run's last model call asked for tools (OpenAI `tool_calls`, Anthropic `tool_use`, `function_call`).
_ASKS_FOR_TOOLS = re.compile(r"tool|function", re.I)
# Tools that end a run with its answer (smolagents `final_answer`, pydantic-ai `final_result`).
_FINAL_TOOL = re.compile(r"^final_(answer|result)$")
# Instrumentations that name an agent span `<agent><suffix>` and set no agent name attribute:
# smolagents `<agent>.run`, CrewAI `<role>._execute_core` (by instrumentation scope).
_NAME_SUFFIXES = (("smolagents", ".run"), ("crewai", "._execute_core"))
# CrewAI declares its agent's iteration limit only inside the agent span's input JSON.
_MAX_ITER = re.compile(r'"max_iter"\s*:\s*(\d+)')


@dataclass
class _Span:
    """The columns of one stored span that the rules read."""

    span_id: str
    parent: str | None
    name: str
    operation: str
    start: Any
    end: Any
    status: str
    status_message: str | None
    error_type: str | None
    error_template: str | None
    agent_name: str | None
    agent_version: str | None
    model: str | None
    response_model: str | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    tool_name: str | None
    op_name: str | None
    oi_kind: str | None
    service_version: str | None
    langfuse_version: str | None
    exception: tuple[str | None, str | None] | None  # the first recorded exception's (type, message)
    named: bool = False  # an agent/workflow span naming its agent by attribute, not only by span name
    scope: str | None = None
    finish: str | None = None  # an LLM span's finish reason(s), as text
    max_steps: int | None = None  # the step limit a run span declares (smolagents)
    children: list[_Span] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.status == "ERROR" or self.error_type is not None

    @property
    def has_error_evidence(self) -> bool:
        return self.failed or self.exception is not None

    def error(self) -> tuple[str | None, str | None]:
        """(exception type, message): the recorded exception's, else the span's error type and status."""
        exc_type, exc_message = self.exception or (None, None)
        return (exc_type or self.error_type, exc_message or self.status_message)


@dataclass
class DerivedRun:
    """What the pass writes over a runs row (None: keep the row's value)."""

    project: str
    trace_id: str
    is_run: bool
    root_span_id: str | None = None
    root_kind: str | None = None
    name: str | None = None
    agent: str | None = None
    version: str | None = None
    start_time: Any = None
    end_time: Any = None
    duration_ms: float | None = None
    ok: bool | None = None
    stop_reason: str | None = None
    stop_reason_source: str | None = None
    steps: int | None = None
    llm_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    models: list[str] = field(default_factory=list)
    last_error_kind: str | None = None
    last_error_tool: str | None = None
    last_error_type: str | None = None
    last_error_template: str | None = None
    failure_evidence: str | None = None
    agents: str | None = None  # JSON list
    not_calls: list[str] = field(default_factory=list)  # LLM/tool span ids that are not calls


def _exception(events: str | None) -> tuple[str | None, str | None] | None:
    if not events:
        return None
    try:
        parsed = json.loads(events)
    except ValueError:
        return None
    for event in parsed if isinstance(parsed, list) else []:
        if isinstance(event, dict) and event.get("name") == c.EXCEPTION_EVENT:
            attrs = event.get("attributes") or {}
            exc_type, message = attrs.get(c.EXCEPTION_TYPE), attrs.get(c.EXCEPTION_MESSAGE)
            return (str(exc_type) if exc_type is not None else None, str(message) if message is not None else None)
    return None


def _short_type(exc_type: str | None) -> str:
    """`agents.exceptions.MaxTurnsExceeded` and `<class 'x.Y'>` -> the class name."""
    if not exc_type:
        return ""
    text = exc_type.strip()
    if text.startswith("<class '") and text.endswith("'>"):
        text = text[8:-2]
    return text.rsplit(".", 1)[-1]


def _limit_reason(exc_type: str | None, message: str | None) -> str | None:
    short = _short_type(exc_type)
    for type_rule, message_rule, reason in _LIMIT_RULES:
        if type_rule.search(short) and (message_rule is None or (message and message_rule.search(message))):
            return reason
    if message and _LIMIT_MESSAGE.search(message):
        return "max_steps"
    return None


def _strip_prefix(name: str) -> str:
    for prefix in _NAME_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return name


class _Trace:
    """One trace's span tree and which of its spans are calls."""

    def __init__(self, spans: list[_Span]) -> None:
        self.spans = sorted(spans, key=lambda s: (s.start, s.end, s.span_id))
        self.by_id = {s.span_id: s for s in self.spans}
        for s in self.spans:
            parent = self.by_id.get(s.parent) if s.parent else None
            if parent is not None and parent is not s:
                parent.children.append(s)
        self.top: _Span | None = None
        self.has_llm_below: set[str] = set()
        self.has_tool_below: set[str] = set()
        for s in self.spans:  # mark every ancestor of each LLM / tool span (cycle-safe)
            if s.operation not in (_LLM, _TOOL):
                continue
            marks = self.has_llm_below if s.operation == _LLM else self.has_tool_below
            seen = {s.span_id}
            parent = self.by_id.get(s.parent) if s.parent else None
            while parent is not None and parent.span_id not in seen and parent.span_id not in marks:
                marks.add(parent.span_id)
                seen.add(parent.span_id)
                parent = self.by_id.get(parent.parent) if parent.parent else None

    def is_llm_call(self, s: _Span) -> bool:
        """A model request: not a wrapper with an LLM span under it, and some sign a request was made
        (usage, a response model, or a failure) - LlamaIndex's `_prepare_chat_with_tools` has none."""
        if s.operation != _LLM or s.span_id in self.has_llm_below:
            return False
        return s.input_tokens is not None or s.output_tokens is not None or s.response_model is not None or s.failed

    def is_tool_call(self, s: _Span) -> bool:
        """A tool span that ran a named tool: not a wrapper of one, not synthetic (ADK's merged tools),
        not a handoff (OpenAI Agents' `handoff to X` is a tool span that names no tool)."""
        if s.operation != _TOOL or s.span_id in self.has_tool_below or not s.tool_name:
            return False
        return _SYNTHETIC_TOOL not in s.name and _SYNTHETIC_TOOL not in s.tool_name

    def is_agentic(self, s: _Span) -> bool:
        return s.operation in _AGENTIC and s.op_name != c.OP_CREATE_AGENT

    def is_agent_scope(self, s: _Span) -> bool:
        """The run's top span, and nested agent/workflow spans that name their agent by attribute;
        an unnamed nested agent span (a LangGraph `agent` node) is part of its caller's scope."""
        return s is self.top or (self.is_agentic(s) and s.named)


def _steps(trace: _Trace, spans: list[_Span], calls: list[_Span], tools: list[_Span]) -> int:
    """Framework step spans when there are any, else model turns: an LLM call with the tools it asked
    for; a call right after a failed call, with no tool started in between, is a retry (an attempt)."""
    framework = sum(1 for s in spans if s.operation == _STEP or _FRAMEWORK_STEP_NAME.match(s.name))
    if framework:
        return framework
    turns = 0
    previous: _Span | None = None
    tool_starts = sorted(t.start for t in tools)
    for call in sorted(calls, key=lambda s: (s.start, s.span_id)):
        retry = (
            previous is not None
            and previous.failed
            and not any(previous.start <= t < call.start for t in tool_starts)
        )
        if not retry:
            turns += 1
        previous = call
    return turns


def _own_spans(trace: _Trace, top: _Span) -> list[_Span]:
    """`top` and its descendants, stopping at nested agent/workflow spans (their own scope)."""
    out: list[_Span] = []
    stack = [top]
    seen: set[str] = set()
    while stack:
        s = stack.pop()
        if s.span_id in seen:
            continue
        seen.add(s.span_id)
        out.append(s)
        stack.extend(ch for ch in s.children if not trace.is_agent_scope(ch))
    return out


def _counts(trace: _Trace, spans: list[_Span]) -> dict[str, Any]:
    calls = [s for s in spans if trace.is_llm_call(s)]
    tools = [s for s in spans if trace.is_tool_call(s)]
    priced = [s.cost_usd for s in (*calls, *tools) if s.cost_usd is not None]
    return {
        "calls": calls,
        "tools": tools,
        "llm_calls": len(calls),
        "tool_calls": len(tools),
        "tool_errors": sum(1 for t in tools if t.failed),
        "input_tokens": sum(s.input_tokens or 0 for s in calls),
        "output_tokens": sum(s.output_tokens or 0 for s in calls),
        "cost_usd": sum(priced) if priced else None,
        "steps": _steps(trace, spans, calls, tools),
    }


def _agent_rows(trace: _Trace, agentic: list[_Span], root: _Span | None, run_ok: bool | None) -> list[dict[str, Any]]:
    """One row per agent/workflow span; the run's own top span shares the run's outcome (its last model
    call may have failed without the span saying so)."""
    rows = []
    for a in agentic:
        own = _own_spans(trace, a)
        n = _counts(trace, own)
        parent = trace.by_id.get(a.parent) if a.parent else None
        while parent is not None and not trace.is_agent_scope(parent):
            parent = trace.by_id.get(parent.parent) if parent.parent else None
        rows.append({
            "span_id": a.span_id,
            "parent_span_id": parent.span_id if parent is not None else None,
            "kind": a.operation,
            "agent": a.agent_name or _strip_prefix(a.name),
            "version": a.agent_version,
            "name": a.name,
            "steps": n["steps"],
            "llm_calls": n["llm_calls"],
            "tool_calls": n["tool_calls"],
            "tool_errors": n["tool_errors"],
            "input_tokens": n["input_tokens"],
            "output_tokens": n["output_tokens"],
            "cost_usd": n["cost_usd"],
            "errors": sum(1 for s in own if s.failed),
            "ok": run_ok if a is root and run_ok is not None else not a.has_error_evidence,
        })  # fmt: skip
    return rows


def _root(trace: _Trace) -> tuple[_Span | None, str | None]:
    """The run's top span: the outermost agent or workflow span, or a parentless OpenInference CHAIN
    (a LangGraph graph, a CrewAI crew), else the trace's parentless root; and its root kind."""
    def key(s: _Span) -> tuple:
        return (s.start, s.parent is not None, -(s.end - s.start).total_seconds(), s.span_id)

    tops = [s for s in trace.spans if trace.is_agentic(s) or (s.parent is None and (s.oi_kind or "").upper() == _OI_CHAIN)]
    if tops:
        return min(tops, key=key), ROOT_AGENT
    roots = [s for s in trace.spans if s.parent is None]
    if roots:
        return min(roots, key=key), ROOT_PARENTLESS
    # No root stored: normally a run still in flight (no outcome yet). But an instrumentation that
    # never exports its run span when the run raises (smolagents under OpenInference) leaves a failed
    # orphan on top for good; that one stands for the run until a real root arrives.
    orphans = [s for s in trace.spans if s.parent not in trace.by_id]
    top = min(orphans, key=key, default=None)
    if top is not None and top.has_error_evidence:
        return top, ROOT_PARENTLESS
    return None, None


def _run_agent(trace: _Trace, root: _Span, agentic: list[_Span]) -> str | None:
    """The run's agent: a top span that names its agent, or a workflow top (named after itself);
    else the first nested agent span naming its agent (OpenAI Agents' unnamed `Agent workflow` top);
    else the top's name as its convention gives it (smolagents `<agent>.run`: the agent)."""
    if root.agent_name and root.named:
        return root.agent_name
    named = next((s.agent_name for s in agentic if s is not root and s.named and s.agent_name), None)
    if named:
        return named
    if not root.named and root.operation == WORKFLOW_CLASS:  # an unnamed graph or crew: its first agent
        first = next((s for s in agentic if s is not root), None)
        if first is not None:
            return _implicit_name(first)
    return _implicit_name(root) or next((s.agent_name for s in trace.spans if s.agent_name), None)


def _implicit_name(s: _Span) -> str | None:
    """An agent span's name as its convention gives it (OpenInference: the span name)."""
    name = s.agent_name or (_strip_prefix(s.name) if s.operation in _AGENTIC else None)
    for scope, suffix in _NAME_SUFFIXES:
        if name and s.scope and scope in s.scope and name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _stopped_by_limit(trace: _Trace, root: _Span, calls: list[_Span], tools: list[_Span]) -> bool:
    """A run with no error whose loop was cut off by the framework's limit: the model never answered.
    Its step count reached the limit its run span declares without a final-answer tool (smolagents);
    or its last model call asked for tools that never ran (LangGraph's `remaining_steps`); or a tool
    ran after its last model call, so no model saw the result (Strands' turn limit)."""
    final = any(_FINAL_TOOL.match(t.tool_name or "") for t in tools)
    if not final:
        for a in trace.spans:
            if a.max_steps and (a is root or trace.is_agentic(a)):
                own = _own_spans(trace, a)
                if _steps(trace, own, [s for s in own if trace.is_llm_call(s)], [s for s in own if trace.is_tool_call(s)]) >= a.max_steps:
                    return True
    last_call = max(calls, key=lambda s: (s.end, s.span_id), default=None)
    if last_call is None:
        return False
    if last_call.finish and _ASKS_FOR_TOOLS.search(last_call.finish) and not any(t.start >= last_call.start for t in tools):
        return True
    last_tool = max(tools, key=lambda s: (s.end, s.span_id), default=None)
    return last_tool is not None and last_tool.start >= last_call.end and not _FINAL_TOOL.match(last_tool.tool_name or "")


def _after(s: _Span, others: list[_Span]) -> bool:
    """Whether some call of `others` ended successfully after `s` ended."""
    return any(o is not s and not o.failed and o.end > s.end for o in others)


def derive_trace(project: str, trace_id: str, spans: list[_Span]) -> DerivedRun:
    """The rules of design.md §3 "Runs of foreign clients" for one trace's stored spans."""
    trace = _Trace(spans)
    agentic = [s for s in trace.spans if trace.is_agentic(s)]
    n = _counts(trace, trace.spans)
    not_calls = [
        s.span_id for s in trace.spans
        if (s.operation == _LLM and not trace.is_llm_call(s)) or (s.operation == _TOOL and not trace.is_tool_call(s))
    ]  # fmt: skip
    builds_agent = any(s.op_name == c.OP_CREATE_AGENT for s in trace.spans)
    if builds_agent and not agentic and not n["llm_calls"] and not n["tool_calls"]:
        return DerivedRun(project, trace_id, is_run=False, not_calls=not_calls)

    root, root_kind = _root(trace)
    run = DerivedRun(
        project, trace_id, is_run=True, not_calls=not_calls,
        llm_calls=n["llm_calls"], tool_calls=n["tool_calls"], tool_errors=n["tool_errors"],
        input_tokens=n["input_tokens"], output_tokens=n["output_tokens"], cost_usd=n["cost_usd"],
        models=sorted({s.model for s in n["calls"] if s.model}),
    )  # fmt: skip
    if root is None:  # no top span stored yet: counts only, outcome once the root arrives
        return run

    trace.top = root
    run.root_span_id, run.root_kind, run.name = root.span_id, root_kind, root.name
    run.start_time, run.end_time = root.start, root.end
    run.duration_ms = (root.end - root.start).total_seconds() * 1000.0
    run.agent = _run_agent(trace, root, agentic)
    run.version = (
        root.agent_version
        or next((s.agent_version for s in agentic if s.agent_version), None)
        or next((s.agent_version for s in trace.spans if s.agent_version), None)
        or root.service_version
        or root.langfuse_version
        or next((s.service_version or s.langfuse_version for s in agentic if s.service_version or s.langfuse_version), None)
    )
    run.steps = n["steps"]
    run.stop_reason_source = SOURCE_INFERRED
    _outcome(run, trace, root, n["calls"], n["tools"])
    scopes = [s for s in agentic if trace.is_agent_scope(s)]
    if scopes:
        run.agents = json.dumps(_agent_rows(trace, scopes, root, run.ok), default=str)
    return run


def _outcome(run: DerivedRun, trace: _Trace, root: _Span, calls: list[_Span], tools: list[_Span]) -> None:
    """ok and stop_reason, with the span whose error is the evidence (inference table, design.md §3)."""
    leaves = [*calls, *tools]
    limit: tuple[str, _Span] | None = None
    for s in sorted(trace.spans, key=lambda x: (x.end, x.span_id), reverse=True):
        if s.has_error_evidence and (reason := _limit_reason(*s.error())):
            limit = (reason, s)
            break
    last_call = max(calls, key=lambda s: (s.end, s.span_id), default=None)
    llm_failed = (
        last_call is not None
        and last_call.failed
        and not _CANCELLED.search(_short_type(last_call.error()[0]))
        and not _after(last_call, leaves)
    )
    if not (root.has_error_evidence or llm_failed or limit):
        if _stopped_by_limit(trace, root, calls, tools):
            run.ok, run.stop_reason = False, "max_steps"
        else:
            run.ok, run.stop_reason = True, "finish"
        return
    run.ok = False
    root_type, root_message = root.error() if root.has_error_evidence else (None, None)
    failing_leaves = [s for s in leaves if s.failed]
    last_leaf = max(failing_leaves, key=lambda s: (s.end, s.span_id), default=None)
    evidence: _Span
    if limit is not None:
        run.stop_reason, evidence = limit
    elif _CANCELLED.search(_short_type(root_type)):
        run.stop_reason, evidence = "cancelled", root
    elif llm_failed and last_call is not None:
        run.stop_reason, evidence = "llm_unavailable", last_call
    elif _TIMEOUT_TYPE.search(_short_type(root_type)) or (root_message and _TIMEOUT_MESSAGE.search(root_message)):
        run.stop_reason, evidence = "timeout", root
    elif last_leaf is not None and last_leaf.operation == _TOOL and not _after(last_leaf, leaves):
        run.stop_reason, evidence = "tool_error_exhausted", last_leaf
    else:
        run.stop_reason = "internal_error"
        evidence = root if root.has_error_evidence else (last_leaf or root)
    exc_type, message = evidence.error()
    if exc_type is None and evidence is not root and root.has_error_evidence:
        exc_type, message = root_type, root_message or message
    run.last_error_kind = evidence.operation
    run.last_error_tool = evidence.tool_name if evidence.operation == _TOOL else None
    run.last_error_type = _short_type(exc_type) or None
    run.last_error_template = evidence.error_template if evidence.failed and evidence.error_template else safe_template(message)
    if root.has_error_evidence and root_type:  # what the run raised to its caller
        exc_type, message = root_type, root_message
    text = ": ".join(p for p in (_short_type(exc_type), message) if p)
    run.failure_evidence = text[:_EVIDENCE_CHARS] or None


# ---- SQL ---------------------------------------------------------------------------------------

# The touched traces whose stop reason was not reported by a run span (upkeep.py's `touched`).
_TRACES = """
CREATE OR REPLACE TEMP TABLE derive_traces AS
SELECT project, trace_id, span_start, span_end FROM touched WHERE NOT reported
"""

# All their spans, bounded by their extent; attributes, resource and events only of the few spans
# whose rules need them (agent/workflow spans, roots, spans that recorded an exception).
_SPANS = """
SELECT s.project, s.trace_id, s.span_id, s.parent_span_id, s.name, s.operation, s.start_time, s.end_time,
    s.status, s.status_message, s.error_type, s.error_template, s.agent_name, s.agent_version, s.model,
    s.response_model, s.input_tokens, s.output_tokens, s.cost_usd, s.tool_name,
    CASE WHEN s.operation IN ($agent, $workflow) OR s.parent_span_id IS NULL
        THEN json_extract_string(s.attributes, $op_path) END AS op_name,
    CASE WHEN s.parent_span_id IS NULL THEN json_extract_string(s.attributes, $oi_kind_path) END AS oi_kind,
    json_extract_string(s.resource, $service_version_path) AS service_version,
    CASE WHEN s.operation IN ($agent, $workflow) OR s.parent_span_id IS NULL THEN coalesce(
        json_extract_string(s.attributes, $lf_version_path), json_extract_string(s.resource, $lf_version_path),
        json_extract_string(s.attributes, $lf_release_path), json_extract_string(s.resource, $lf_release_path))
        END AS langfuse_version,
    CASE WHEN s.events::VARCHAR <> '[]' AND contains(s.events::VARCHAR, $exception_name) THEN s.events::VARCHAR END
        AS events,
    CASE WHEN s.operation IN ($agent, $workflow) THEN coalesce(
        json_extract_string(s.attributes, $name_path) IS NOT NULL OR json_extract_string(s.attributes, $oi_name_path) IS NOT NULL
        OR json_extract_string(s.attributes, $workflow_name_path) IS NOT NULL
        OR json_extract_string(s.attributes, $pydantic_name_path) IS NOT NULL
        OR json_extract_string(s.attributes, $entity_name_path) IS NOT NULL, false) END AS named,
    s.scope,
    CASE WHEN s.operation = $llm THEN coalesce(json_extract_string(s.attributes, $oi_finish_path),
        json_extract(s.attributes, $finish_path)::VARCHAR) END AS finish,
    CASE WHEN s.parent_span_id IS NULL OR s.operation = $agent THEN TRY_CAST(coalesce(
        json_extract_string(s.attributes, $max_steps_path), json_extract_string(s.attributes, $openlit_max_steps_path),
        nullif(regexp_extract(json_extract_string(s.attributes, $input_path), $max_iter, 1), ''))
        AS INTEGER) END AS max_steps,
    s.operation = $agent AND json_extract_string(s.attributes, $openlit_step_path) IS NOT NULL AS is_step,
    CASE WHEN contains(s.attributes::VARCHAR, $lc_agent_key)
        THEN json_extract_string(json_extract_string(s.attributes, $metadata_path), $lc_agent_path) END AS lc_agent
FROM spans s SEMI JOIN derive_traces t ON s.project = t.project AND s.trace_id = t.trace_id
WHERE s.start_time BETWEEN $lo AND $hi AND s.trace_id IN (SELECT trace_id FROM derive_traces)
"""

_SPAN_PARAMS = {
    "agent": _AGENT,
    "workflow": WORKFLOW_CLASS,
    "op_path": f'$."{c.GEN_AI_OPERATION_NAME}"',
    "oi_kind_path": f'$."{c.OI_SPAN_KIND}"',
    "service_version_path": f'$."{c.SERVICE_VERSION}"',
    "lf_version_path": f'$."{c.LANGFUSE_VERSION}"',
    "lf_release_path": f'$."{c.LANGFUSE_RELEASE}"',
    "exception_name": f'"{c.EXCEPTION_EVENT}"',
    "llm": _LLM,
    "name_path": f'$."{c.GEN_AI_AGENT_NAME}"',
    "oi_name_path": f'$."{c.OI_AGENT_NAME}"',
    "workflow_name_path": f'$."{c.GEN_AI_WORKFLOW_NAME}"',
    "pydantic_name_path": f'$."{c.PYDANTIC_AI_AGENT_NAME}"',
    "entity_name_path": f'$."{c.TRACELOOP_ENTITY_NAME}"',
    "oi_finish_path": f'$."{c.OI_LLM_FINISH_REASON}"',
    "finish_path": f'$."{c.GEN_AI_RESPONSE_FINISH_REASONS}"',
    "max_steps_path": f'$."{c.SMOLAGENTS_MAX_STEPS}"',
    "openlit_max_steps_path": f'$."{c.OPENLIT_SMOLAGENTS_MAX_STEPS}"',
    "openlit_step_path": f'$."{c.OPENLIT_SMOLAGENTS_STEP_NUMBER}"',
    "input_path": f'$."{c.OI_INPUT_VALUE}"',
    "max_iter": _MAX_ITER.pattern,
    "metadata_path": f'$."{c.OI_METADATA}"',
    "lc_agent_path": f'$."{c.LANGCHAIN_AGENT_NAME_KEY}"',
    # a plain substring test before parsing: most spans have no LangChain metadata, and parsing every
    # span's attributes (up to max_attributes_per_span values of up to 1 MiB) would cost the pass its memory
    "lc_agent_key": c.LANGCHAIN_AGENT_NAME_KEY,
}

_DERIVED_SCHEMA = pa.schema([
    ("project", pa.string()), ("trace_id", pa.string()), ("is_run", pa.bool_()),
    ("root_span_id", pa.string()), ("root_kind", pa.string()), ("name", pa.string()),
    ("agent", pa.string()), ("version", pa.string()),
    ("start_time", pa.timestamp("us")), ("end_time", pa.timestamp("us")), ("duration_ms", pa.float64()),
    ("ok", pa.bool_()), ("stop_reason", pa.string()), ("stop_reason_source", pa.string()), ("steps", pa.int32()),
    ("llm_calls", pa.int32()), ("tool_calls", pa.int32()), ("tool_errors", pa.int32()),
    ("input_tokens", pa.int64()), ("output_tokens", pa.int64()), ("cost_usd", pa.float64()),
    ("models", pa.list_(pa.string())), ("last_error_kind", pa.string()), ("last_error_tool", pa.string()),
    ("last_error_type", pa.string()), ("last_error_template", pa.string()), ("failure_evidence", pa.string()),
    ("agents", pa.string()),
])  # fmt: skip

# The derived facts over the runs rows: counts always (they are the trace's, deduplicated), root and
# outcome fields only once a root is stored (a NULL root_span_id keeps the row's own), the failure
# fields only for a failed run.
_REWRITE = f"""
CREATE OR REPLACE TEMP TABLE derived_runs AS
SELECT * REPLACE ({FAILURE_SIGNATURE_SQL} AS failure_signature) FROM (
    SELECT r.* REPLACE (
        d.is_run AS is_run,
        coalesce(d.root_span_id, r.root_span_id) AS root_span_id,
        coalesce(d.root_kind, r.root_kind) AS root_kind,
        coalesce(d.name, r.name) AS name,
        coalesce(d.agent, r.agent) AS agent,
        coalesce(d.version, r.version) AS version,
        coalesce(d.start_time, r.start_time) AS start_time,
        coalesce(d.end_time, r.end_time) AS end_time,
        coalesce(d.duration_ms, r.duration_ms) AS duration_ms,
        CASE WHEN d.root_span_id IS NOT NULL THEN d.ok ELSE r.ok END AS ok,
        CASE WHEN d.root_span_id IS NOT NULL THEN d.stop_reason ELSE r.stop_reason END AS stop_reason,
        CASE WHEN d.root_span_id IS NOT NULL THEN d.stop_reason_source ELSE r.stop_reason_source END
            AS stop_reason_source,
        CASE WHEN d.root_span_id IS NOT NULL THEN d.steps ELSE r.steps END AS steps,
        CASE WHEN d.is_run THEN d.llm_calls ELSE r.llm_calls END AS llm_calls,
        CASE WHEN d.is_run THEN d.tool_calls ELSE r.tool_calls END AS tool_calls,
        CASE WHEN d.is_run THEN d.tool_errors ELSE r.tool_errors END AS tool_errors,
        CASE WHEN d.is_run THEN d.input_tokens ELSE r.input_tokens END AS input_tokens,
        CASE WHEN d.is_run THEN d.output_tokens ELSE r.output_tokens END AS output_tokens,
        CASE WHEN d.is_run THEN d.cost_usd ELSE r.cost_usd END AS cost_usd,
        CASE WHEN d.is_run THEN d.models ELSE r.models END AS models,
        CASE WHEN d.ok = false THEN d.last_error_kind ELSE r.last_error_kind END AS last_error_kind,
        CASE WHEN d.ok = false THEN d.last_error_tool ELSE r.last_error_tool END AS last_error_tool,
        CASE WHEN d.ok = false THEN d.last_error_type ELSE r.last_error_type END AS last_error_type,
        CASE WHEN d.ok = false THEN d.last_error_template ELSE r.last_error_template END AS last_error_template,
        CASE WHEN d.ok = false THEN d.failure_evidence END AS failure_evidence,
        d.agents::JSON AS agents
    )
    FROM runs r JOIN derived d ON r.project = d.project AND r.trace_id = d.trace_id
    WHERE r.updated_at >= (SELECT min(queued_at) FROM picked)
)
"""

_REPLACE = [
    "DELETE FROM runs USING derived_runs d WHERE runs.project = d.project AND runs.trace_id = d.trace_id",
    "INSERT INTO runs BY NAME SELECT * FROM derived_runs",
    # the analytics rows of this pass carry the run's facts (agent, version)
    """
    UPDATE touched SET agent = d.agent, version = d.version FROM derived_runs d
    WHERE touched.project = d.project AND touched.trace_id = d.trace_id
    """,
]
_DROP_NOT_CALLS = """
DELETE FROM trace_spans USING derive_not_calls n
WHERE trace_spans.project = n.project AND trace_spans.trace_id = n.trace_id AND trace_spans.span_id = n.span_id
"""
_CLEANUP = "DROP TABLE IF EXISTS derive_traces;DROP TABLE IF EXISTS derived_runs"


def _read(conn: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], list[_Span]]:
    lo, hi = conn.execute("SELECT min(span_start), max(span_end) FROM derive_traces").fetchall()[0]
    rows = analytics_load.execute(conn, _SPANS, {**_SPAN_PARAMS, "lo": lo, "hi": hi}).fetchall()
    out: dict[tuple[str, str], list[_Span]] = {}
    for r in rows:
        out.setdefault((r[0], r[1]), []).append(_Span(
            span_id=r[2], parent=r[3], name=r[4], operation=_STEP if r[29] else r[5], start=r[6], end=r[7], status=r[8],
            status_message=r[9], error_type=r[10], error_template=r[11], agent_name=r[12], agent_version=r[13],
            model=r[14], response_model=r[15], input_tokens=r[16], output_tokens=r[17], cost_usd=r[18],
            tool_name=r[19], op_name=r[20], oi_kind=r[21], service_version=r[22], langfuse_version=r[23],
            exception=_exception(r[24]), named=bool(r[25]), scope=r[26], finish=r[27], max_steps=r[28],
        ))  # fmt: skip
        span = out[(r[0], r[1])][-1]
        if r[30] and r[30] == span.name and span.operation not in (_LLM, _TOOL):
            # a LangChain agent's graph root (its span is named after the agent; as a sub-agent under a
            # tool it is a CHAIN): an agent span naming its agent
            span.operation, span.agent_name, span.named = _AGENT, r[30], True
    return out


def maintain(conn: duckdb.DuckDBPyConnection) -> int:
    """Re-derive the runs rows of `touched` traces whose stop reason was not reported (inside the
    pass's transaction, after `trace_spans` is built and before the analytics read it). Returns how
    many traces were derived."""
    conn.execute(_TRACES)
    traces = _read(conn)
    derived = [derive_trace(project, trace_id, spans) for (project, trace_id), spans in traces.items()]
    if derived:
        columns = {name: [getattr(d, name) for d in derived] for name in _DERIVED_SCHEMA.names}
        conn.register("derived", pa.table(columns, schema=_DERIVED_SCHEMA))
        not_calls = [(d.project, d.trace_id, span_id) for d in derived for span_id in d.not_calls]
        try:
            conn.execute(_REWRITE)
            for statement in _REPLACE:
                conn.execute(statement)
            if not_calls:
                projects, trace_ids, span_ids = (list(x) for x in zip(*not_calls, strict=True))
                conn.register("derive_not_calls", pa.table({"project": projects, "trace_id": trace_ids, "span_id": span_ids}))
                try:
                    conn.execute(_DROP_NOT_CALLS)
                finally:
                    conn.unregister("derive_not_calls")
        finally:
            conn.unregister("derived")
    conn.execute(_CLEANUP)
    return len(derived)
