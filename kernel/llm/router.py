"""Pick a model per call by purpose: cheap models for summaries, strong ones for planning.

Rules are plain predicates so callers can route on anything they can see (purpose, length of the
conversation, a flag in the last message) without a rules language to learn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kernel.llm.base import LLM, describe
from kernel.types import LLMResponse, Message

log = logging.getLogger(__name__)

Predicate = Callable[[str, list[Message]], bool]


class Router:
    """Implements `LLM`; the first rule whose predicate holds picks the LLM, else `default`.

    A predicate that raises is skipped (and logged with its traceback): a bad routing rule should
    degrade to the default model, not stop the agent.
    """

    # complete() traces the selected LLM itself (see kernel.telemetry.complete).
    emits_chat_spans = True

    def __init__(self, default: LLM, rules: list[tuple[Predicate, LLM]] | None = None) -> None:
        self.default = default
        self.rules: list[tuple[Predicate, LLM]] = list(rules or [])
        self.model, self.provider = describe(default)

    def select(self, purpose: str, messages: list[Message]) -> LLM:
        for i, (predicate, llm) in enumerate(self.rules):
            try:
                if predicate(purpose, messages):
                    return llm
            except Exception:
                log.exception("router rule %d raised for purpose %r; skipping it", i, purpose)
        return self.default

    async def complete(
        self,
        messages: list[Message],
        tools: list[dict] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        purpose: str = "step",
    ) -> LLMResponse:
        from kernel import telemetry  # kernel.telemetry imports kernel.llm: resolve at call time

        llm = self.select(purpose, messages)
        # The selected LLM's own chat span(s), or one around it when it is a plain adapter.
        return await telemetry.complete(llm, messages, tools, temperature=temperature, max_tokens=max_tokens)
