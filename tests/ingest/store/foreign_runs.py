"""Traces shaped the way agent frameworks emit them (span tree, kinds, names, errors), for run tests.

Each builder returns the trace's spans in start order; a test chooses how to batch and order them.
Shapes follow the frameworks' instrumentations: OTel GenAI agent spans (`invoke_agent`, `chat`,
`execute_tool`; OpenAI Agents, Strands, Agent Framework), OpenInference (AGENT / LLM / TOOL / CHAIN
kinds; smolagents' `Step N` spans, LangGraph graphs, LlamaIndex's nested LLM spans).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tests.ingest.store.otlp_build import T0, S, new_trace_id
from tracer import conventions as c

MS = timedelta(milliseconds=1)


def _chat(tid: str, parent: str, at: datetime, model: str = "gpt-4o-mini", fail: str | None = None) -> S:
    attrs: dict[str, Any] = {c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_REQUEST_MODEL: model}
    if fail is None:
        attrs |= {c.GEN_AI_RESPONSE_MODEL: model, c.GEN_AI_USAGE_INPUT_TOKENS: 100, c.GEN_AI_USAGE_OUTPUT_TOKENS: 10}
        return S(tid, f"chat {model}", parent=parent, start=at, duration=100 * MS, attrs=attrs)
    attrs[c.ERROR_TYPE] = fail
    return S(tid, f"chat {model}", parent=parent, start=at, duration=100 * MS, attrs=attrs, error=True,
             message="Error code: 500", exception=(fail, "Error code: 500 - internal error"))  # fmt: skip


def _tool(tid: str, parent: str, at: datetime, name: str, fail: bool = False) -> S:
    attrs: dict[str, Any] = {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_NAME: name}
    if fail:
        return S(tid, f"execute_tool {name}", parent=parent, start=at, duration=50 * MS, attrs=attrs, error=True,
                 message="ValueError: no such city", exception=("ValueError", "no such city"))  # fmt: skip
    return S(tid, f"execute_tool {name}", parent=parent, start=at, duration=50 * MS, attrs=attrs)


def genai_agent(
    agent: str = "weather_agent",
    version: str | None = None,
    turns: int = 3,
    tool_error: bool = True,
    last_call_fails: bool = False,
    root_exception: tuple[str, str] | None = None,
    root_error: bool = False,
    trace_id: str | None = None,
    start: datetime = T0,
) -> list[S]:
    """An OTel GenAI agent run without steplens attributes: `turns` model turns, the first ones asking
    for two tools (one raising when `tool_error`), the last answering (or failing with HTTP 500)."""
    tid = trace_id or new_trace_id()
    attrs: dict[str, Any] = {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: agent}
    if version:
        attrs[c.GEN_AI_AGENT_VERSION] = version
    root = S(tid, f"invoke_agent {agent}", start=start, duration=timedelta(seconds=turns + 1), attrs=attrs,
             error=root_error, exception=root_exception, message=root_exception[1] if root_exception else "")  # fmt: skip
    spans = [root]
    for i in range(turns):
        at = start + timedelta(seconds=i) + 10 * MS
        last = i == turns - 1
        spans.append(_chat(tid, root.span_id, at, fail="InternalServerError" if last and last_call_fails else None))
        if not last:
            spans.append(_tool(tid, root.span_id, at + 200 * MS, "get_weather", fail=tool_error and i == 0))
            spans.append(_tool(tid, root.span_id, at + 300 * MS, "get_time"))
    return spans


def _oi(tid: str, kind: str, name: str, parent: str | None, at: datetime, dur: timedelta, **attrs: Any) -> S:
    return S(tid, name, parent=parent, start=at, duration=dur, attrs={c.OI_SPAN_KIND: kind, **attrs})


def _oi_llm(tid: str, name: str, parent: str, at: datetime, usage: bool = True) -> S:
    attrs: dict[str, Any] = {c.OI_LLM_MODEL_NAME: "gpt-4o-mini"} if usage else {}
    if usage:
        attrs |= {c.OI_TOKEN_PROMPT: 50, c.OI_TOKEN_COMPLETION: 5}
    return _oi(tid, "LLM", name, parent, at, 80 * MS, **attrs)


def llamaindex_agent(turns: int = 2) -> list[S]:
    """LlamaIndex under OpenInference: each model request is an `achat_with_tools` LLM span around a
    `_prepare_chat_with_tools` LLM span (no request, no usage) and the `achat` LLM span that called."""
    tid = new_trace_id()
    root = _oi(tid, "AGENT", "FunctionAgent.run", None, T0, timedelta(seconds=turns + 1))
    spans = [root]
    for i in range(turns):
        at = T0 + timedelta(seconds=i) + 10 * MS
        wrapper = _oi(tid, "LLM", "FunctionCallingLLM.achat_with_tools", root.span_id, at, 200 * MS)
        prepare = _oi(tid, "LLM", "FunctionCallingLLM._prepare_chat_with_tools", wrapper.span_id, at + MS, 2 * MS)
        call = _oi_llm(tid, "OpenAI.achat", wrapper.span_id, at + 10 * MS)
        spans += [wrapper, prepare, call]
        if i < turns - 1:
            spans.append(_oi(tid, "TOOL", "add", root.span_id, at + 300 * MS, 10 * MS, **{c.OI_TOOL_NAME: "add"}))
    return spans


def smolagents_agent(steps: int = 3, max_steps_error: bool = False) -> list[S]:
    """smolagents under OpenInference: an AGENT span named after the agent class (no agent name), one
    CHAIN `Step N` span per step with its LLM call and tool, the last step's tool `final_answer`; when
    the agent ran out of steps instead, the last step records AgentMaxStepsError."""
    tid = new_trace_id()
    root = _oi(tid, "AGENT", "CodeAgent.run", None, T0, timedelta(seconds=steps + 1))
    spans = [root]
    for i in range(steps):
        at = T0 + timedelta(seconds=i) + 10 * MS
        step = _oi(tid, "CHAIN", f"Step {i + 1}", root.span_id, at, 800 * MS)
        if max_steps_error and i == steps - 1:
            step.exception = ("smolagents.utils.AgentMaxStepsError", "Reached max steps.")
        tool = "final_answer" if i == steps - 1 and not max_steps_error else "web_search"
        spans += [step, _oi_llm(tid, "OpenAIServerModel.generate", step.span_id, at + 10 * MS),
                  _oi(tid, "TOOL", tool, step.span_id, at + 200 * MS, 10 * MS, **{c.OI_TOOL_NAME: tool})]  # fmt: skip
    return spans


def langgraph_supervisor() -> list[S]:
    """A LangGraph graph under OpenInference: a parentless CHAIN `LangGraph` root with two AGENT spans
    under it (a supervisor handing off to a researcher), each with its own model turns."""
    tid = new_trace_id()
    root = _oi(tid, "CHAIN", "LangGraph", None, T0, timedelta(seconds=5))
    sup = _oi(tid, "AGENT", "supervisor", root.span_id, T0 + 10 * MS, timedelta(seconds=4), **{c.OI_AGENT_NAME: "supervisor"})
    spans = [root, sup, _oi_llm(tid, "ChatOpenAI", sup.span_id, T0 + 20 * MS)]
    res = _oi(tid, "AGENT", "researcher", sup.span_id, T0 + timedelta(seconds=1), timedelta(seconds=2),
              **{c.OI_AGENT_NAME: "researcher"})  # fmt: skip
    spans += [res, _oi_llm(tid, "ChatOpenAI", res.span_id, T0 + timedelta(seconds=1.1)),
              _oi(tid, "TOOL", "search", res.span_id, T0 + timedelta(seconds=1.3), 10 * MS, **{c.OI_TOOL_NAME: "search"}),
              _oi_llm(tid, "ChatOpenAI", res.span_id, T0 + timedelta(seconds=1.5)),
              _oi_llm(tid, "ChatOpenAI", sup.span_id, T0 + timedelta(seconds=3.5))]  # fmt: skip
    return spans


def create_agent_only() -> list[S]:
    """A one-span trace recording only that an agent was built (`create_agent`)."""
    tid = new_trace_id()
    return [S(tid, "create_agent helper", start=T0, attrs={c.GEN_AI_OPERATION_NAME: c.OP_CREATE_AGENT,
                                                            c.GEN_AI_AGENT_NAME: "helper"})]  # fmt: skip
