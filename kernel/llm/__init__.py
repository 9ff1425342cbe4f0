"""The kernel's LLM layer: one protocol, adapters behind it, resilience and routing on top.

Import from here; the submodules are an implementation detail.
"""

from kernel.llm.base import LLM, AttemptRecord, LLMError, LLMUnavailable, classify_exception
from kernel.llm.estimate import estimate_tokens, estimate_usage
from kernel.llm.openai_compat import OpenAICompatLLM
from kernel.llm.replay import ReplayExhausted, ReplayLLM
from kernel.llm.resilient import CompletionOutcome, ResilientLLM
from kernel.llm.router import Route, Router
from kernel.llm.scope import (
    AttemptRequest,
    AttemptScope,
    NullAttemptScope,
    ScopeFactory,
    current_attempt_request,
)
from kernel.llm.scripted import Delayed, ScriptedCall, ScriptedLLM, ScriptExhausted

__all__ = [
    "LLM",
    "AttemptRecord",
    "AttemptRequest",
    "AttemptScope",
    "CompletionOutcome",
    "Delayed",
    "LLMError",
    "LLMUnavailable",
    "NullAttemptScope",
    "OpenAICompatLLM",
    "ReplayExhausted",
    "ReplayLLM",
    "ResilientLLM",
    "Route",
    "Router",
    "ScopeFactory",
    "ScriptExhausted",
    "ScriptedCall",
    "ScriptedLLM",
    "classify_exception",
    "current_attempt_request",
    "estimate_tokens",
    "estimate_usage",
]
