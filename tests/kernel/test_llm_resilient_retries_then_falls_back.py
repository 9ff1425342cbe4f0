"""ResilientLLM: retry what is transient, fall back when a model is done, give up loudly.

Waits go through an injected sleep, so the tests check the backoff the layer *asks for* (real
behaviour) without spending wall time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from kernel.llm import LLM, LLMError, LLMUnavailable, ResilientLLM, ScriptedLLM
from kernel.types import LLMResponse, Message, Usage

MSGS = [Message(role="user", content="hello")]


def transient(code: str = "server_error", status: int = 500, retry_after: float | None = None) -> LLMError:
    return LLMError(f"{status} {code}", error_type=code, retryable=True, status_code=status,
                    retry_after=retry_after)


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@dataclass
class RecordingScope:
    opened: dict
    responses: list[LLMResponse] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)

    def record_request(self, **kw: object) -> None:
        self.requests.append(kw)

    def record_response(self, resp: LLMResponse) -> None:
        self.responses.append(resp)

    def record_error(self, exc: BaseException) -> None:
        self.errors.append(exc)


class ScopeLog:
    def __init__(self) -> None:
        self.scopes: list[RecordingScope] = []

    @contextmanager
    def __call__(self, **kw: object) -> Iterator[RecordingScope]:
        scope = RecordingScope(opened=dict(kw))
        self.scopes.append(scope)
        yield scope


def resilient(chain: list[LLM], **kw: object) -> tuple[ResilientLLM, Sleeps, ScopeLog]:
    sleeps, scopes = Sleeps(), ScopeLog()
    llm = ResilientLLM(chain, max_attempts_per_model=3, backoff_initial_s=0.01, backoff_max_s=0.04,
                       retry_after_cap_s=2.0, attempt_scope=scopes, sleep=sleeps, **kw)
    return llm, sleeps, scopes


async def test_transient_errors_are_retried_with_growing_backoff() -> None:
    primary = ScriptedLLM([transient(), transient("rate_limit_exceeded", 429), "ok"], model="m1")
    llm, sleeps, scopes = resilient([primary])
    resp = await llm.complete(MSGS, temperature=0.0)
    assert resp.text == "ok"
    assert [(a.model, a.attempt, a.error_type) for a in llm.last_attempts] == [
        ("m1", 1, "server_error"), ("m1", 2, "rate_limit_exceeded"), ("m1", 3, None)]
    assert llm.last_attempts[-1].usage == resp.usage
    assert len(sleeps.waits) == 2
    # exponential: initial * 2**(n-1) plus jitter in [0, initial], capped at backoff_max_s
    assert 0.01 <= sleeps.waits[0] <= 0.02
    assert 0.02 <= sleeps.waits[1] <= 0.03
    assert [s.opened["attempt"] for s in scopes.scopes] == [1, 2, 3]
    assert [len(s.errors) for s in scopes.scopes] == [1, 1, 0]
    assert scopes.scopes[-1].responses == [resp]
    assert scopes.scopes[0].requests[0]["temperature"] == 0.0


async def test_backoff_is_capped() -> None:
    primary = ScriptedLLM([transient()] * 5 + ["ok"])
    llm, sleeps, _ = resilient([primary])
    llm.max_attempts_per_model = 6
    await llm.complete(MSGS)
    assert max(sleeps.waits) <= 0.04


async def test_retry_after_is_honoured_and_capped() -> None:
    primary = ScriptedLLM([transient("rate_limit", 429, retry_after=1.5),
                           transient("rate_limit", 429, retry_after=600.0), "ok"])
    llm, sleeps, _ = resilient([primary])
    assert (await llm.complete(MSGS)).text == "ok"
    assert sleeps.waits == [1.5, 2.0]


async def test_exhausted_model_falls_back_to_next_with_fallback_from() -> None:
    first = ScriptedLLM(policy=lambda m, t: transient("overloaded", 503), model="big", provider="p1")
    second = ScriptedLLM(["rescued"], model="small", provider="p2")
    llm, _, scopes = resilient([first, second])
    outcome = await llm.complete_with_attempts(MSGS)
    assert outcome.response.text == "rescued" and outcome.response.model == "small"
    assert [(a.model, a.provider, a.attempt, a.fallback_from, a.error_type) for a in outcome.attempts] == [
        ("big", "p1", 1, None, "overloaded"),
        ("big", "p1", 2, None, "overloaded"),
        ("big", "p1", 3, None, "overloaded"),
        ("small", "p2", 1, "big", None),
    ]
    assert [s.opened for s in scopes.scopes][-1] == {
        "model": "small", "provider": "p2", "attempt": 1, "fallback_from": "big"}
    assert len(first.calls) == 3 and len(second.calls) == 1


async def test_request_level_error_is_neither_retried_nor_falls_back() -> None:
    bad = LLMError("400 invalid messages", error_type="invalid_request_error", status_code=400)
    first = ScriptedLLM([bad, "never"], model="big")
    second = ScriptedLLM(["never"], model="small")
    llm, sleeps, _ = resilient([first, second])
    with pytest.raises(LLMUnavailable) as info:
        await llm.complete(MSGS)
    assert info.value.error_type == "invalid_request_error"
    assert info.value.__cause__ is bad
    assert [a.error_type for a in info.value.attempts] == ["invalid_request_error"]
    assert llm.last_attempts == info.value.attempts
    assert sleeps.waits == [] and len(first.calls) == 1 and second.calls == []


async def test_model_level_error_falls_back_without_retry() -> None:
    gone = LLMError("404 model not found", error_type="model_not_found", status_code=404, model_level=True)
    first = ScriptedLLM([gone], model="retired")
    second = ScriptedLLM(["fine"], model="current")
    llm, sleeps, _ = resilient([first, second])
    assert (await llm.complete(MSGS)).text == "fine"
    assert [(a.model, a.error_type) for a in llm.last_attempts] == [("retired", "model_not_found"),
                                                                     ("current", None)]
    assert sleeps.waits == []


async def test_whole_chain_failing_raises_llm_unavailable_with_every_attempt() -> None:
    first = ScriptedLLM(policy=lambda m, t: transient(), model="a")
    second = ScriptedLLM(policy=lambda m, t: TimeoutError("read timed out"), model="b")
    llm, _, scopes = resilient([first, second])
    with pytest.raises(LLMUnavailable) as info:
        await llm.complete(MSGS)
    err = info.value
    assert len(err.attempts) == 6
    assert [a.error_type for a in err.attempts] == ["server_error"] * 3 + ["TimeoutError"] * 3
    assert err.error_type == "TimeoutError" and not err.retryable
    assert "a#1=server_error" in str(err) and "b#3=TimeoutError" in str(err)
    assert all(a.duration_s >= 0 for a in err.attempts)
    # the tracer saw the classified error (with error_type), not a bare TimeoutError
    assert all(isinstance(s.errors[0], LLMError) for s in scopes.scopes)


async def test_unknown_exception_is_classified_by_class_name_and_falls_back() -> None:
    first = ScriptedLLM([ZeroDivisionError("adapter bug")], model="a")
    second = ScriptedLLM(["ok"], model="b")
    llm, sleeps, _ = resilient([first, second])
    assert (await llm.complete(MSGS)).text == "ok"
    assert llm.last_attempts[0].error_type == "ZeroDivisionError" and sleeps.waits == []


async def test_a_broken_tracer_hook_never_breaks_the_call(caplog: pytest.LogCaptureFixture) -> None:
    class BadScope:
        def record_response(self, resp: LLMResponse) -> None:
            raise RuntimeError("tracer bug")

        def record_error(self, exc: BaseException) -> None:
            raise RuntimeError("tracer bug")

    @contextmanager
    def bad_factory(**kw: object) -> Iterator[BadScope]:
        yield BadScope()

    def unopenable(**kw: object) -> object:
        raise RuntimeError("cannot open")

    for factory in (bad_factory, unopenable):
        llm = ResilientLLM([ScriptedLLM([transient(), "ok"])], backoff_initial_s=0.001,
                           attempt_scope=factory, sleep=Sleeps())
        with caplog.at_level(logging.ERROR, logger="kernel.llm.scope"):
            assert (await llm.complete(MSGS)).text == "ok"
    assert "record_response failed" in caplog.text and "could not be opened" in caplog.text


async def test_subclass_can_override_the_attempt_scope_hook() -> None:
    seen: list[tuple[str, int]] = []

    class Traced(ResilientLLM):
        @contextmanager
        def attempt_scope(self, *, model, provider, attempt, fallback_from):  # type: ignore[override]
            seen.append((model, attempt))
            yield RecordingScope(opened={})

    llm = Traced([ScriptedLLM(["ok"], model="m")])
    assert (await llm.complete(MSGS)).text == "ok"
    assert seen == [("m", 1)]


async def test_cancellation_is_not_retried_or_swallowed() -> None:
    slow = ScriptedLLM(policy=lambda m, t: asyncio.sleep(10, result="late"), model="slow")
    llm, sleeps, _ = resilient([slow, ScriptedLLM(["never"])])
    task = asyncio.ensure_future(llm.complete(MSGS))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sleeps.waits == [] and len(slow.calls) == 1


def test_constructor_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        ResilientLLM([])
    with pytest.raises(ValueError):
        ResilientLLM([ScriptedLLM(["x"])], max_attempts_per_model=0)


async def test_usage_of_winning_attempt_is_recorded() -> None:
    llm, _, _ = resilient([ScriptedLLM([LLMResponse(text="x", usage=Usage(input_tokens=5, output_tokens=2))])])
    await llm.complete(MSGS)
    assert llm.last_attempts[0].usage == Usage(input_tokens=5, output_tokens=2)
    assert llm.model == "scripted"


async def test_factory_can_read_the_request_when_opening_its_scope() -> None:
    from kernel.llm import current_attempt_request

    seen: list[tuple] = []

    @contextmanager
    def factory(**kw: object) -> Iterator[RecordingScope]:
        req = current_attempt_request()
        assert req is not None
        seen.append((kw["attempt"], req.messages[0].content, req.temperature, req.max_tokens))
        yield RecordingScope(opened=dict(kw))

    llm = ResilientLLM([ScriptedLLM([transient(), "ok"])], backoff_initial_s=0.001, attempt_scope=factory,
                       sleep=Sleeps())
    await llm.complete(MSGS, temperature=0.2, max_tokens=64)
    assert seen == [(1, "hello", 0.2, 64), (2, "hello", 0.2, 64)]
    assert current_attempt_request() is None
