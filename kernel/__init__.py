"""steplens kernel: build agents with `from kernel import Agent, Budget, tool, ...`.

Names are resolved lazily (PEP 562) so that importing one submodule (e.g. `kernel.types` from
ingest-side tooling or the tracer's tests) does not drag in the whole loop and its dependencies,
and so that submodules importing each other never meet a half-initialised package.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    # the loop
    "Agent": "kernel.agent",
    "RunState": "kernel.agent",
    "LLMCall": "kernel.agent",
    "DEFAULT_SYSTEM_PROMPT": "kernel.agent",
    # limits and guards
    "Budget": "kernel.budgets",
    "BudgetCheck": "kernel.budgets",
    "BudgetLine": "kernel.budgets",
    "BudgetTracker": "kernel.budgets",
    "LoopGuard": "kernel.loop_guard",
    "LoopVerdict": "kernel.loop_guard",
    "Context": "kernel.context",
    "ContextPolicy": "kernel.context",
    "Compaction": "kernel.context",
    "llm_summariser": "kernel.summarise",
    # tools and policies
    "Tool": "kernel.tools",
    "ToolRegistry": "kernel.tools",
    "tool": "kernel.tools",
    "SideEffectPolicy": "kernel.policy",
    "PolicyDecision": "kernel.policy",
    "AllowAll": "kernel.policy",
    "DenyAll": "kernel.policy",
    "AllowList": "kernel.policy",
    "ConfirmCallback": "kernel.policy",
    "Shadow": "kernel.policy",
    # LLMs
    "LLM": "kernel.llm",
    "LLMError": "kernel.llm",
    "LLMUnavailable": "kernel.llm",
    "ScriptedLLM": "kernel.llm",
    "Delayed": "kernel.llm",
    "Router": "kernel.llm",
    "Route": "kernel.llm",
    "LLMPurpose": "tracer.conventions",
    # data model
    "Message": "kernel.types",
    "ToolCall": "kernel.types",
    "Usage": "kernel.types",
    "LLMResponse": "kernel.types",
    "Observation": "kernel.types",
    "StepRecord": "kernel.types",
    "GuardEvent": "kernel.types",
    "RunResult": "kernel.types",
    "StopReason": "tracer.conventions",
    "StepKind": "tracer.conventions",
    "GuardRule": "tracer.conventions",
    # MCP servers as a tool source (imports the mcp SDK only when used)
    "MCPToolSource": "kernel.mcp",
    "MCPToolOptions": "kernel.mcp",
    # long-term memory and big observations
    "LongTermMemory": "kernel.memory",
    "SQLiteMemoryStore": "kernel.memory",
    "MemoryStore": "kernel.memory",
    "MemoryRecord": "kernel.memory",
    "lexical_score": "kernel.memory",
    "embedding_scorer": "kernel.memory",
    "BigObservations": "kernel.observations",
}

__all__ = [
    "Agent",
    "AllowAll",
    "BigObservations",
    "AllowList",
    "Budget",
    "BudgetCheck",
    "BudgetLine",
    "BudgetTracker",
    "Compaction",
    "ConfirmCallback",
    "Context",
    "ContextPolicy",
    "DEFAULT_SYSTEM_PROMPT",
    "Delayed",
    "DenyAll",
    "GuardEvent",
    "GuardRule",
    "LLM",
    "LLMCall",
    "LLMError",
    "LLMPurpose",
    "LLMResponse",
    "LLMUnavailable",
    "LongTermMemory",
    "LoopGuard",
    "LoopVerdict",
    "MCPToolOptions",
    "MCPToolSource",
    "MemoryRecord",
    "MemoryStore",
    "Message",
    "Observation",
    "PolicyDecision",
    "Route",
    "Router",
    "RunResult",
    "RunState",
    "SQLiteMemoryStore",
    "ScriptedLLM",
    "Shadow",
    "SideEffectPolicy",
    "StepKind",
    "StepRecord",
    "StopReason",
    "Tool",
    "ToolCall",
    "ToolRegistry",
    "Usage",
    "embedding_scorer",
    "lexical_score",
    "llm_summariser",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kernel' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # cache: later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # static analysers and IDEs see the real names
    from kernel.agent import DEFAULT_SYSTEM_PROMPT, Agent, LLMCall, RunState
    from kernel.budgets import Budget, BudgetCheck, BudgetLine, BudgetTracker
    from kernel.context import Compaction, Context, ContextPolicy
    from kernel.llm import LLM, Delayed, LLMError, LLMUnavailable, Route, Router, ScriptedLLM
    from kernel.loop_guard import LoopGuard, LoopVerdict
    from kernel.mcp import MCPToolOptions, MCPToolSource
    from kernel.memory import (
        LongTermMemory,
        MemoryRecord,
        MemoryStore,
        SQLiteMemoryStore,
        embedding_scorer,
        lexical_score,
    )
    from kernel.observations import BigObservations
    from kernel.policy import (
        AllowAll,
        AllowList,
        ConfirmCallback,
        DenyAll,
        PolicyDecision,
        Shadow,
        SideEffectPolicy,
    )
    from kernel.summarise import llm_summariser
    from kernel.tools import Tool, ToolRegistry, tool
    from kernel.types import (
        GuardEvent,
        LLMResponse,
        Message,
        Observation,
        RunResult,
        StepRecord,
        ToolCall,
        Usage,
    )
    from tracer.conventions import GuardRule, LLMPurpose, StepKind, StopReason
