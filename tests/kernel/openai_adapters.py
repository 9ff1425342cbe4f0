"""OpenAI-compatible adapters made by tests, remembered so a conftest fixture closes each after its
test and no HTTP connection outlives it."""

from __future__ import annotations

from typing import Any

from kernel.llm.openai_compat import OpenAICompatLLM

OPEN: list[OpenAICompatLLM] = []


def adapter(*args: Any, **kwargs: Any) -> OpenAICompatLLM:
    """An adapter closed after the test, so no HTTP connection outlives it."""
    llm = OpenAICompatLLM(*args, **kwargs)
    OPEN.append(llm)
    return llm
