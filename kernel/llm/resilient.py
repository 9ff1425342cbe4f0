"""Retries with backoff and a fallback chain of models, one observable scope per attempt.

Provider outages are the common case, not the exception, for agents that run for minutes. This
layer retries what is transient (429, 5xx, timeouts, dropped connections) with exponential
backoff + jitter (honouring a capped Retry-After), then falls back to the next model; it gives
up with `LLMUnavailable` only when the whole chain is exhausted, so the loop has one exception
to map to stop reason `llm_unavailable`.

A chain member may be a `Router`: the call's purpose (step, plan, replan, summary, judge) reaches
it, and the route is resolved here, before the attempts, so each attempt's chat span names the
model the router picked and the rule that picked it (as when the router is called directly), and
retries and fallbacks stay one span per real attempt.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_exponential_jitter

from kernel.llm.base import LLM, AttemptRecord, LLMError, LLMUnavailable, classify_exception, describe
from kernel.llm.scope import (
    AttemptRequest,
    AttemptScope,
    NullAttemptScope,
    ScopeFactory,
    attempt_request,
    call_labels,
    current_call_labels,
    guarded,
)
from kernel.types import LLMResponse, Message
from tracer.conventions import LLMPurpose

log = logging.getLogger(__name__)


@dataclass
class CompletionOutcome:
    """A response together with every attempt it took (failed ones first, the winner last)."""

    response: LLMResponse
    attempts: list[AttemptRecord]


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, LLMError) and exc.retryable


def _worth_falling_back(err: LLMError) -> bool:
    """Could the next model help? Not when the request itself is at fault (a plain 400). A member
    that is a chain of its own (a ResilientLLM a Router chose) gives up with `LLMUnavailable`,
    judged by the error that ended it."""
    if isinstance(err, LLMUnavailable) and isinstance(err.__cause__, LLMError):
        err = err.__cause__
    return err.retryable or err.model_level


def resolve_route(llm: LLM, purpose: str, messages: list[Message]) -> tuple[LLM, str | None]:
    """(the LLM that will answer, the routing rule that chose it or None): a member that routes
    (`Router.choose`) is asked, and again if it picked another router."""
    rule: str | None = None
    for _ in range(8):  # routers of routers, bounded: a cycle of routers must not hang the call
        choose = getattr(llm, "choose", None)
        if not (getattr(llm, "routes_by_purpose", False) and callable(choose)):
            break
        llm, rule = choose(purpose, messages)
    return llm, rule


def call_purpose(purpose: str | None) -> str:
    """The purpose given, else the one of the call in progress (set by `kernel.telemetry.complete`
    around every kernel call site), else `step`."""
    return str(purpose or current_call_labels().purpose or LLMPurpose.STEP)


class ResilientLLM:
    """Implements `LLM` over a chain of LLMs: retry each, then fall back to the next.

    Attempts of the last call are in `last_attempts` (convenient for a single-run loop); code
    that shares one instance across concurrent runs should use `complete_with_attempts`, which
    returns them with the response. On failure they are on `LLMUnavailable.attempts`.

    Tracing plugs in through `attempt_scope` (override it in a subclass, or pass
    `attempt_scope=factory`; see kernel/llm/scope.py). `sleep` is injectable so tests can see the
    waits without spending them.
    """

    # Each attempt gets its own chat span (attempt_scope), so callers must not wrap it in another.
    emits_chat_spans = True
    # kernel.telemetry.complete passes the call's purpose, for the Routers in the chain.
    routes_by_purpose = True

    def __init__(
        self,
        chain: list[LLM],
        max_attempts_per_model: int = 3,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 8.0,
        retry_after_cap_s: float = 10.0,
        *,
        attempt_scope: ScopeFactory | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if not chain:
            raise ValueError("ResilientLLM needs at least one LLM in the chain")
        if max_attempts_per_model < 1:
            raise ValueError("max_attempts_per_model must be >= 1")
        self.chain = list(chain)
        self.max_attempts_per_model = max_attempts_per_model
        self.retry_after_cap_s = retry_after_cap_s
        self._backoff = wait_exponential_jitter(
            multiplier=backoff_initial_s, max=backoff_max_s, jitter=backoff_initial_s
        )
        self._scope_factory = attempt_scope
        self._sleep = sleep
        self.model, self.provider = describe(self.chain[0])
        self.last_attempts: list[AttemptRecord] = []

    async def aclose(self) -> None:
        """Close every chain member that holds resources (e.g. an adapter's HTTP client)."""
        for llm in self.chain:
            close = getattr(llm, "aclose", None)
            if close is not None:
                await close()

    def attempt_scope(
        self, *, model: str, provider: str, attempt: int, fallback_from: str | None
    ) -> AbstractContextManager[AttemptScope]:
        """The hook each attempt runs inside. Default: the factory given, else a `chat {model}`
        span per attempt (`kernel.telemetry`; a no-op while tracing is off)."""
        if self._scope_factory is not None:
            return self._scope_factory(
                model=model, provider=provider, attempt=attempt, fallback_from=fallback_from
            )
        from kernel import telemetry  # kernel.telemetry imports kernel.llm: resolve at call time

        return telemetry.chat_attempt(model=model, provider=provider, attempt=attempt, fallback_from=fallback_from)

    def _wait(self, state: RetryCallState) -> float:
        """Retry-After wins when the provider sent one (capped: we'd rather fall back than hang)."""
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, LLMError) and exc.retry_after is not None:
            return min(max(exc.retry_after, 0.0), self.retry_after_cap_s)
        return float(self._backoff(state))

    async def complete(
        self,
        messages: list[Message],
        tools: list[dict] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        purpose: str | None = None,
    ) -> LLMResponse:
        try:
            outcome = await self.complete_with_attempts(
                messages, tools, temperature=temperature, max_tokens=max_tokens, purpose=purpose
            )
        except LLMUnavailable as err:
            self.last_attempts = err.attempts
            raise
        self.last_attempts = outcome.attempts
        return outcome.response

    async def complete_with_attempts(
        self,
        messages: list[Message],
        tools: list[dict] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        purpose: str | None = None,
    ) -> CompletionOutcome:
        """`purpose` (conventions.LLMPurpose) is what routing members route on; None: the purpose
        of the kernel call in progress, else `step`."""
        purpose = call_purpose(purpose)
        with call_labels(purpose=purpose):
            return await self._complete_chain(messages, tools, temperature, max_tokens, purpose)

    async def _complete_chain(
        self,
        messages: list[Message],
        tools: list[dict] | None,
        temperature: float | None,
        max_tokens: int | None,
        purpose: str,
    ) -> CompletionOutcome:
        attempts: list[AttemptRecord] = []
        last_error: LLMError | None = None
        prev_model: str | None = None
        for member in self.chain:
            llm, rule = resolve_route(member, purpose, messages)
            model, provider = describe(llm)
            labels = {"route_rule": rule, "route_model": model} if rule is not None else {}
            retrying = AsyncRetrying(
                stop=stop_after_attempt(self.max_attempts_per_model),
                wait=self._wait,
                retry=retry_if_exception(_is_retryable),
                sleep=self._sleep,
                reraise=True,
            )
            try:
                async for ctl in retrying:
                    with ctl, call_labels(**labels):
                        response = await self._attempt(
                            llm,
                            attempts,
                            model=model,
                            provider=provider,
                            attempt=ctl.retry_state.attempt_number,
                            fallback_from=prev_model,
                            messages=messages,
                            tools=tools,
                            temperature=temperature,
                            max_tokens=max_tokens,
                            purpose=purpose,
                        )
                return CompletionOutcome(response=response, attempts=attempts)
            except LLMError as err:
                last_error = err
                if not _worth_falling_back(err):
                    # The request itself is at fault (e.g. a plain 400): another model won't help.
                    log.warning("LLM %s failed with non-retryable %s; not falling back", model, err.error_type)
                    break
                log.warning("LLM %s gave up (%s); trying next model in chain", model, err.error_type)
            prev_model = model
        raise LLMUnavailable(attempts) from last_error

    async def _attempt(
        self,
        llm: LLM,
        attempts: list[AttemptRecord],
        *,
        model: str,
        provider: str,
        attempt: int,
        fallback_from: str | None,
        messages: list[Message],
        tools: list[dict] | None,
        temperature: float | None,
        max_tokens: int | None,
        purpose: str,
    ) -> LLMResponse:
        def make() -> AbstractContextManager[AttemptScope]:
            if getattr(llm, "emits_chat_spans", False):
                # e.g. a ResilientLLM behind a Router in this chain: it opens its own attempt spans
                return nullcontext(NullAttemptScope())
            return self.attempt_scope(
                model=model, provider=provider, attempt=attempt, fallback_from=fallback_from
            )

        kwargs: dict = {"temperature": temperature, "max_tokens": max_tokens}
        if getattr(llm, "routes_by_purpose", False):
            kwargs["purpose"] = purpose
        started = time.perf_counter()
        request = AttemptRequest(messages, tools, temperature, max_tokens)
        with attempt_request(request), guarded(make) as scope:
            scope.record_request(messages=messages, tools=tools, temperature=temperature, max_tokens=max_tokens)
            try:
                response = await llm.complete(messages, tools, **kwargs)
            except Exception as exc:
                err = classify_exception(exc)
                scope.record_error(err)
                attempts.append(
                    AttemptRecord(model, provider, attempt, fallback_from, err.error_type,
                                  time.perf_counter() - started)
                )
                if err is exc:
                    raise
                raise err from exc
            scope.record_response(response)
            attempts.append(
                AttemptRecord(model, provider, attempt, fallback_from, None,
                              time.perf_counter() - started, response.usage)
            )
            return response
