"""Which OperationClass a span is, whatever convention its client follows.

Why an ordered list of rules: a span can carry several conventions at once (OpenLLMetry emits
`gen_ai.operation.name` *and* `llm.request.type`; OpenInference wraps OTel spans). The most
specific, most standard signal wins: OTel GenAI operation name, then our own span names, then
OpenInference, then OpenLLMetry; anything unrecognised is `other`, never a guess.
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

# traceloop.span.kind values → class. A Traceloop workflow is the top of a run, so it is the
# agent span of that run; tasks are arbitrary units of work, not loop steps.
TRACELOOP_KINDS: dict[str, str] = {
    "workflow": Op.AGENT.value,
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

# Our own span names without a gen_ai.operation.name (design.md §2).
_EXACT_NAMES: dict[str, str] = {
    c.SPAN_BUDGET_CHECK: Op.BUDGET.value,
    c.SPAN_TRUNCATE: Op.TRUNCATE.value,
}
_STEP_PREFIX = c.SPAN_STEP.split("{", 1)[0]  # "step "
_REPLAN_PREFIX = c.SPAN_REPLAN.split("{", 1)[0]  # "replan "


def operation_class(name: str, attrs: dict[str, Any]) -> str:
    """The OperationClass value of one span from its name and attributes."""
    get = attrs.get
    op = get(c.GEN_AI_OPERATION_NAME)
    if op is not None:
        found = GEN_AI_OPERATIONS.get(op) if isinstance(op, str) else None
        if found is not None:
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
        found = OPENINFERENCE_KINDS.get(kind.upper())
        if found is not None:
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
    return Op.OTHER.value
