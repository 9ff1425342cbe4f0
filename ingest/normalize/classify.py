"""Which OperationClass a span is, whatever convention its client follows.

Why an ordered list of rules: a span can carry several conventions at once (OpenLLMetry emits
`gen_ai.operation.name` *and* `llm.request.type`; OpenInference wraps OTel spans). The most
specific, most standard signal wins: OTel GenAI operation name, then our own span names, then
OpenInference, then OpenLLMetry, then the Langfuse SDK's observation type, then weaker hints (a bare
`gen_ai.tool.name`, an `execute_tool <tool>` span name, pydantic-ai's `agent_name`); anything unrecognised is `other`, never a guess.

Some spans look like model or tool calls and are not (design.md §3): Google ADK's synthetic
`execute_tool (merged tools)` span (it wraps tool calls that have their own spans), OpenAI Agents'
`handoff to <agent>` TOOL span (no tool name: control passes to another agent), OpenInference
LLM spans of LlamaIndex helper methods that only build a request (a private `_method` or a known
helper, with no token counts: the model call is its own LLM span), and a workflow root, which is
a workflow, not an agent, so runs can name it and still see the agents under it.
"""

from __future__ import annotations

from typing import Any

from tracer import conventions as c
from tracer.conventions import OperationClass as Op

# gen_ai.operation.name values → class (OTel GenAI semconv; unknown values fall through).
GEN_AI_OPERATIONS: dict[str, str] = {
    c.OP_INVOKE_AGENT: Op.AGENT.value,
    c.OP_CREATE_AGENT: Op.AGENT.value,
    c.OP_CHAT: Op.LLM.value,
    c.OP_TEXT_COMPLETION: Op.LLM.value,
    c.OP_GENERATE_CONTENT: Op.LLM.value,
    c.OP_EXECUTE_TOOL: Op.TOOL.value,
    c.OP_EMBEDDINGS: Op.EMBEDDING.value,
    c.OP_PLAN: Op.PLAN.value,
    "retrieval": Op.RETRIEVAL.value,
    c.OP_INVOKE_WORKFLOW: Op.WORKFLOW.value,
    **{name: Op.MEMORY.value for name in c.OP_MEMORY_NAMES},
}

# openinference.span.kind values → class.
OPENINFERENCE_KINDS: dict[str, str] = {
    "AGENT": Op.AGENT.value,
    "LLM": Op.LLM.value,
    "TOOL": Op.TOOL.value,
    "RETRIEVER": Op.RETRIEVAL.value,
    "RERANKER": Op.RETRIEVAL.value,
    "EMBEDDING": Op.EMBEDDING.value,
    "CHAIN": Op.OTHER.value,
    "GUARDRAIL": Op.OTHER.value,
    "EVALUATOR": Op.OTHER.value,
    "PROMPT": Op.OTHER.value,
    "DECISION": Op.OTHER.value,
    "UNKNOWN": Op.OTHER.value,
}

# traceloop.span.kind values → class. A Traceloop workflow is the top of a run (the runs table
# takes agent and workflow spans as run roots); tasks are arbitrary units of work, not loop steps.
TRACELOOP_KINDS: dict[str, str] = {
    "workflow": Op.WORKFLOW.value,
    "agent": Op.AGENT.value,
    "tool": Op.TOOL.value,
    "task": Op.OTHER.value,
    "unknown": Op.OTHER.value,
}

# llm.request.type values (OpenLLMetry) → class.
LLM_REQUEST_TYPES: dict[str, str] = {
    "chat": Op.LLM.value,
    "completion": Op.LLM.value,
    "embedding": Op.EMBEDDING.value,
    "rerank": Op.RETRIEVAL.value,
}

# langfuse.observation.type values (Langfuse SDK) → class.
LANGFUSE_TYPES: dict[str, str] = {
    "generation": Op.LLM.value,
    "embedding": Op.EMBEDDING.value,
    "agent": Op.AGENT.value,
    "tool": Op.TOOL.value,
    "retriever": Op.RETRIEVAL.value,
    "chain": Op.OTHER.value,
    "evaluator": Op.OTHER.value,
    "guardrail": Op.OTHER.value,
    "span": Op.OTHER.value,
    "event": Op.OTHER.value,
}

# Our own span names without a gen_ai.operation.name (design.md §2).
_EXACT_NAMES: dict[str, str] = {
    c.SPAN_BUDGET_CHECK: Op.BUDGET.value,
    c.SPAN_TRUNCATE: Op.TRUNCATE.value,
}
_TOOL = Op.TOOL.value
_LLM = Op.LLM.value
_OTHER = Op.OTHER.value
_WORKFLOW = Op.WORKFLOW.value
_STEP_PREFIX = c.SPAN_STEP.split("{", 1)[0]  # "step "
_REPLAN_PREFIX = c.SPAN_REPLAN.split("{", 1)[0]  # "replan "
TOOL_PREFIX = _TOOL_PREFIX = c.SPAN_TOOL.split("{", 1)[0]  # "execute_tool "


def operation_class(name: str, attrs: dict[str, Any], is_root: bool = False) -> str:
    """The OperationClass value of one span from its name and attributes (`is_root`: it has no
    parent, which makes an OpenInference CHAIN the workflow of its trace)."""
    get = attrs.get
    op = get(c.GEN_AI_OPERATION_NAME)
    if op is not None:
        found = GEN_AI_OPERATIONS.get(op) if isinstance(op, str) else None
        if found is not None:
            if found == _TOOL and get(c.GEN_AI_TOOL_NAME) == c.ADK_MERGED_TOOLS:
                return _OTHER
            return found
    found = _EXACT_NAMES.get(name)
    if found is not None:
        return found
    if name.startswith(_STEP_PREFIX) and (c.STEP_INDEX in attrs or name[len(_STEP_PREFIX) :].isdigit()):
        return Op.STEP.value
    if name.startswith(_REPLAN_PREFIX) or c.REPLAN_VERDICT in attrs:
        return Op.REPLAN.value
    kind = get(c.OI_SPAN_KIND)
    if isinstance(kind, str):
        upper = kind.upper()
        found = OPENINFERENCE_KINDS.get(upper)
        if found is not None:
            if found == _LLM and _is_llm_helper(name, attrs):
                return _OTHER
            if found == _TOOL and c.OI_TOOL_NAME not in attrs and name.startswith(c.OI_HANDOFF_PREFIX):
                return _OTHER  # OpenAI Agents' `handoff to <agent>`: a transfer, not a tool call
            if is_root and upper == "CHAIN":
                return _WORKFLOW
            return found
    kind = get(c.TRACELOOP_SPAN_KIND)
    if isinstance(kind, str):
        found = TRACELOOP_KINDS.get(kind.lower())
        if found is not None:
            return found
    kind = get(c.LLM_REQUEST_TYPE)
    if isinstance(kind, str):
        found = LLM_REQUEST_TYPES.get(kind.lower())
        if found is not None:
            return found
    kind = get(c.LANGFUSE_OBSERVATION_TYPE)
    if isinstance(kind, str):
        found = LANGFUSE_TYPES.get(kind.lower())
        if found is not None:
            return found
    tool = get(c.GEN_AI_TOOL_NAME)
    if tool is not None:  # pydantic-ai's `running tool` spans name the tool and nothing else
        return _OTHER if tool == c.ADK_MERGED_TOOLS else _TOOL
    if name.startswith(_TOOL_PREFIX) and len(name) > len(_TOOL_PREFIX):
        # The GenAI span name alone (openlit's failed tool spans carry no gen_ai.* attribute at all).
        return _OTHER if name[len(_TOOL_PREFIX) :].startswith("(merged") else _TOOL
    if c.PYDANTIC_AI_AGENT_NAME in attrs:  # pydantic-ai / Logfire agent run span
        return Op.AGENT.value
    return _OTHER


def _is_llm_helper(name: str, attrs: dict[str, Any]) -> bool:
    """An OpenInference LLM span of a method that builds or reads a request without calling the
    model (LlamaIndex `OpenAI._prepare_chat_with_tools`): private or known helper, and no usage."""
    method = name.rpartition(".")[2]
    private = method.startswith("_") and not method.startswith("__")  # DSPy's `LM.__call__` is a call
    if not (private or method in c.OI_LLM_HELPER_METHODS):
        return False
    return c.OI_TOKEN_PROMPT not in attrs and c.OI_TOKEN_COMPLETION not in attrs and c.OI_TOKEN_TOTAL not in attrs
