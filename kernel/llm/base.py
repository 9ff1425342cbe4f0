"""The LLM contract every adapter implements, and the errors the resilience layer reasons about.

Adapters (OpenAI-compatible, scripted, replay) differ wildly in how they fail; the loop must not
care. So every failure is turned into an `LLMError` that says whether trying again could help
(`retryable`), whether another model could help (`model_level`), and what to call it on a span
(`error_type`: the provider's own error code, or the exception class name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kernel.types import LLMResponse, Message, Usage


@runtime_checkable
class LLM(Protocol):
    """Anything that turns a conversation (+ tool schemas) into one `LLMResponse`.

    Implementations may expose `model: str` and `provider: str`; the resilience layer and the
    tracer read them with `getattr` so that small test doubles need not.
    """

    async def complete(
        self,
        messages: list[Message],
        tools: list[dict] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> LLMResponse: ...


class LLMError(Exception):
    """A failed completion, classified so that retry and fallback decisions need no guessing.

    `model_level` marks non-retryable failures that another model/provider might not have
    (unknown model, context too long, auth refused by that provider). Retryable errors always
    allow a fallback once retries are exhausted.
    """

    def __init__(
        self,
        message: str,
        *,
        error_type: str,
        retryable: bool = False,
        status_code: int | None = None,
        retry_after: float | None = None,
        model_level: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.error_type = error_type
        self.retryable = retryable
        self.status_code = status_code
        self.retry_after = retry_after
        self.model_level = model_level

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, error_type={self.error_type!r}, "
            f"retryable={self.retryable}, status_code={self.status_code})"
        )


@dataclass
class AttemptRecord:
    """One try of one model, kept so the loop can record what the resilience layer went through."""

    model: str
    provider: str
    attempt: int  # 1-based, counted per model
    fallback_from: str | None  # the model this chain position replaced, None for the first
    error_type: str | None  # None when the attempt produced a response
    duration_s: float
    usage: Usage | None = None


class LLMUnavailable(LLMError):
    """Every model in the chain failed. The loop maps this to stop reason `llm_unavailable`.

    `error_type` is the last attempt's error type, so the run span says *why* it was unavailable.
    """

    def __init__(self, attempts: list[AttemptRecord], message: str | None = None) -> None:
        last = attempts[-1].error_type if attempts else None
        if message is None:
            tried = ", ".join(f"{a.model}#{a.attempt}={a.error_type}" for a in attempts) or "nothing"
            message = f"all models failed after {len(attempts)} attempt(s): {tried}"
        super().__init__(message, error_type=last or "llm_unavailable", retryable=False)
        self.attempts = attempts


_TRANSIENT_BUILTINS: tuple[type[BaseException], ...] = (TimeoutError, ConnectionError)


def classify_exception(exc: BaseException) -> LLMError:
    """Turn whatever an adapter raised into an `LLMError` (returned as is when it already is one).

    Timeouts and connection failures are worth retrying; anything else unknown is treated as a
    model-level failure: retrying the same adapter will not help, but another adapter might.
    """
    if isinstance(exc, LLMError):
        return exc
    retryable = isinstance(exc, _TRANSIENT_BUILTINS)
    err = LLMError(
        str(exc) or type(exc).__name__,
        error_type=type(exc).__name__,
        retryable=retryable,
        model_level=not retryable,
    )
    err.__cause__ = exc
    return err


def describe(llm: Any) -> tuple[str, str]:
    """(model, provider) of any LLM, with safe defaults for doubles that do not declare them."""
    model = getattr(llm, "model", None) or type(llm).__name__
    provider = getattr(llm, "provider", None) or "unknown"
    return str(model), str(provider)
