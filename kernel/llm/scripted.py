"""A deterministic LLM for tests and demos: it says exactly what it is told to.

Replies come from a list (consumed in order) or from a policy function that sees the
conversation. Every call is recorded so tests can assert what the kernel actually sent.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kernel.llm.base import LLMError
from kernel.llm.estimate import estimate_usage
from kernel.types import LLMResponse, Message


@dataclass(frozen=True)
class Delayed:
    """A reply that takes `delay_s` seconds to arrive (for timeout and cancellation tests)."""

    reply: str | LLMResponse | BaseException
    delay_s: float


# What a script entry or a policy may produce.
Reply = str | LLMResponse | BaseException | Delayed
Policy = Callable[[list[Message], list[dict] | None], Reply | Awaitable[Reply]]


@dataclass
class ScriptedCall:
    """What the kernel sent on one call (copies, so later mutation by the caller cannot hide it)."""

    messages: list[Message]
    tools: list[dict] | None
    temperature: float | None
    max_tokens: int | None
    extra: dict[str, Any] = field(default_factory=dict)


class ScriptExhausted(LLMError):
    """The kernel asked for more turns than the script has: a test or demo bug, said loudly."""

    def __init__(self, calls: int, available: int) -> None:
        super().__init__(
            f"scripted LLM has {available} reply(ies) but was called {calls} time(s)",
            error_type="script_exhausted",
        )


class ScriptedLLM:
    """Implements `LLM`. Give `replies` (str → text answer; `LLMResponse` → as is; an exception
    instance → raised; `Delayed(reply, s)` or `(reply, s)` → after a pause) or a `policy`
    `(messages, tools) -> reply` (sync or async). Usage the reply does not carry is estimated."""

    def __init__(
        self,
        replies: list | None = None,
        policy: Policy | None = None,
        model: str = "scripted",
        provider: str = "scripted",
    ) -> None:
        if (replies is None) == (policy is None):
            raise ValueError("ScriptedLLM needs exactly one of `replies` or `policy`")
        self._replies = list(replies) if replies is not None else None
        self._policy = policy
        self.model = model
        self.provider = provider
        self.calls: list[ScriptedCall] = []

    @property
    def remaining(self) -> int | None:
        """Replies not yet consumed (None under a policy, which never runs out)."""
        if self._replies is None:
            return None
        return max(0, len(self._replies) - len(self.calls))

    async def complete(
        self,
        messages: list[Message],
        tools: list[dict] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        **extra: Any,
    ) -> LLMResponse:
        self.calls.append(
            ScriptedCall(
                messages=[m.model_copy(deep=True) for m in messages],
                tools=[dict(t) for t in tools] if tools is not None else None,
                temperature=temperature,
                max_tokens=max_tokens,
                extra=dict(extra),
            )
        )
        reply = await self._next_reply(messages, tools)
        delay = 0.0
        if isinstance(reply, Delayed):
            reply, delay = reply.reply, reply.delay_s
        elif isinstance(reply, tuple) and len(reply) == 2 and isinstance(reply[1], int | float):
            reply, delay = reply[0], float(reply[1])
        if delay > 0:
            await asyncio.sleep(delay)
        if isinstance(reply, type) and issubclass(reply, BaseException):
            reply = reply()
        if isinstance(reply, BaseException):
            raise reply
        return self._to_response(reply, messages, tools)

    async def _next_reply(self, messages: list[Message], tools: list[dict] | None) -> Any:
        if self._policy is not None:
            out = self._policy(messages, tools)
            return await out if inspect.isawaitable(out) else out
        assert self._replies is not None
        index = len(self.calls) - 1
        if index >= len(self._replies):
            raise ScriptExhausted(len(self.calls), len(self._replies))
        return self._replies[index]

    def _to_response(self, reply: Any, messages: list[Message], tools: list[dict] | None) -> LLMResponse:
        if isinstance(reply, str):
            resp = LLMResponse(text=reply, finish_reason="stop")
        elif isinstance(reply, LLMResponse):
            resp = reply.model_copy(deep=True)
        else:
            raise TypeError(
                f"scripted reply must be str, LLMResponse, an exception or Delayed; got {type(reply).__name__}"
            )
        if not resp.model:
            resp.model = self.model
        if not resp.provider:
            resp.provider = self.provider
        if resp.finish_reason is None:
            resp.finish_reason = "tool_calls" if resp.tool_calls else "stop"
        if resp.usage is None:
            resp.usage = estimate_usage(messages, tools, resp)
        return resp
