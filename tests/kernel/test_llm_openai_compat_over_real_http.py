"""The OpenAI-compatible adapter, wrapped by ResilientLLM, against a real HTTP server on 127.0.0.1.

Covers what breaks agents in production: several tool calls per turn, a 500 that must be retried,
a model that keeps failing so the chain falls back, a 400 that must not be retried, malformed
tool-call JSON that must become `format_error` instead of an exception, timeouts and refused
connections, and an API key that must be sent but never leak.
"""

from __future__ import annotations

import logging
import socket

import pytest

from kernel.llm import LLMError, LLMUnavailable, ResilientLLM
from kernel.types import Message, ToolCall
from tests.kernel.openai_adapters import adapter
from tests.support.fake_openai import (
    FakeOpenAI,
    HttpErrorReply,
    TextReply,
    ToolCallSpec,
    ToolCallsReply,
    Usage,
    malformed_tool_call,
)

MSGS = [Message(role="system", content="You are terse."), Message(role="user", content="Weather in Paris?")]
TOOLS = [{"name": "get_weather", "description": "Weather by city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]




class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def chain(fake: FakeOpenAI, *models: str, **kw: object) -> tuple[ResilientLLM, Sleeps]:
    sleeps = Sleeps()
    llms = [adapter(m, fake.base_url, api_key="sk-test-secret", timeout_s=5, **kw) for m in models]
    return ResilientLLM(llms, max_attempts_per_model=3, backoff_initial_s=0.001, backoff_max_s=0.002,
                        sleep=sleeps), sleeps


async def test_500_is_retried_then_several_tool_calls_are_parsed(fake: FakeOpenAI) -> None:
    fake.enqueue(
        HttpErrorReply(500),
        ToolCallsReply([ToolCallSpec("get_weather", {"city": "Paris"}, id="c1"),
                        ToolCallSpec("get_time", {"tz": "CET"}, id="c2")],
                       usage=Usage(prompt_tokens=120, completion_tokens=30, cached_tokens=64),
                       response_model="gpt-x-2025-01-01"),
        model="gpt-x",
    )
    llm, sleeps = chain(fake, "gpt-x")
    resp = await llm.complete(MSGS, TOOLS)
    assert resp.tool_calls == [ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"}),
                               ToolCall(id="c2", name="get_time", arguments={"tz": "CET"})]
    assert resp.format_error is None
    assert resp.finish_reason == "tool_calls" and resp.model == "gpt-x-2025-01-01" and resp.provider == "openai"
    assert resp.usage is not None and not resp.usage.estimated
    assert (resp.usage.input_tokens, resp.usage.output_tokens, resp.usage.cached_input_tokens) == (120, 30, 64)
    assert [(a.model, a.attempt, a.error_type) for a in llm.last_attempts] == [
        ("gpt-x", 1, "server_error"), ("gpt-x", 2, None)]
    assert len(sleeps.waits) == 1

    sent = fake.requests[-1]
    assert sent["model"] == "gpt-x" and sent["temperature"] == 0.0 and sent["max_tokens"] == 1024
    assert sent["tools"][0] == {"type": "function", "function": {
        "name": "get_weather", "description": "Weather by city", "parameters": TOOLS[0]["parameters"]}}
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert fake.request_headers[-1]["authorization"] == "Bearer sk-test-secret"


async def test_failing_model_falls_back_to_the_next(fake: FakeOpenAI) -> None:
    fake.always("flaky", HttpErrorReply(503, type="overloaded_error", headers={"retry-after": "0.01"}))
    fake.enqueue(TextReply("from backup"), model="backup")
    llm, sleeps = chain(fake, "flaky", "backup")
    resp = await llm.complete(MSGS)
    assert resp.text == "from backup" and resp.model == "backup"
    assert [(a.model, a.attempt, a.fallback_from, a.error_type) for a in llm.last_attempts] == [
        ("flaky", 1, None, "overloaded_error"), ("flaky", 2, None, "overloaded_error"),
        ("flaky", 3, None, "overloaded_error"), ("backup", 1, "flaky", None)]
    assert sleeps.waits == [0.01, 0.01]  # Retry-After honoured
    assert [r["model"] for r in fake.requests] == ["flaky"] * 3 + ["backup"]


async def test_400_is_not_retried_and_carries_the_provider_code(fake: FakeOpenAI) -> None:
    fake.enqueue(HttpErrorReply(400, "messages[1].content is invalid", "invalid_request_error",
                                code="invalid_value"), model="m")
    llm, sleeps = chain(fake, "m", "other")
    with pytest.raises(LLMUnavailable) as info:
        await llm.complete(MSGS)
    assert len(fake.requests) == 1 and sleeps.waits == []
    assert info.value.error_type == "invalid_value"
    cause = info.value.__cause__
    assert isinstance(cause, LLMError) and cause.status_code == 400 and not cause.retryable
    assert "messages[1].content is invalid" in str(cause)


async def test_unknown_model_404_falls_back_without_retry(fake: FakeOpenAI) -> None:
    fake.enqueue(HttpErrorReply(404, "no such model", "invalid_request_error", code="model_not_found"),
                 model="retired")
    llm, _ = chain(fake, "retired", "current")
    assert (await llm.complete(MSGS)).model == "current"
    assert [(a.model, a.error_type) for a in llm.last_attempts] == [("retired", "model_not_found"),
                                                                     ("current", None)]


async def test_malformed_tool_call_json_becomes_format_error(fake: FakeOpenAI) -> None:
    fake.enqueue(malformed_tool_call("get_weather", '{"city": "Par'))
    resp = await adapter("m", fake.base_url).complete(MSGS, TOOLS)
    assert resp.tool_calls[0].name == "get_weather"
    assert resp.tool_calls[0].arguments == {"_raw": '{"city": "Par'}
    assert resp.format_error is not None
    assert "get_weather" in resp.format_error and "not valid JSON" in resp.format_error


async def test_non_object_arguments_are_kept_raw_and_flagged(fake: FakeOpenAI) -> None:
    fake.enqueue(ToolCallsReply([ToolCallSpec("a", "[1, 2]"), ToolCallSpec("b", {"ok": True})]))
    resp = await adapter("m", fake.base_url).complete(MSGS)
    assert resp.tool_calls[0].arguments == {"_raw": "[1, 2]"}
    assert resp.tool_calls[1].arguments == {"ok": True}
    assert resp.format_error is not None and "not an object" in resp.format_error


async def test_tool_history_round_trips_in_wire_shape(fake: FakeOpenAI) -> None:
    history = MSGS + [
        Message(role="assistant", content=None,
                tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"}),
                            ToolCall(id="c2", name="bad", arguments={"_raw": "{oops"})]),
        Message(role="tool", tool_call_id="c1", name="get_weather", content="Sunny"),
    ]
    await adapter("m", fake.base_url).complete(history, temperature=0.5, max_tokens=7)
    sent = fake.requests[-1]
    assert sent["temperature"] == 0.5 and sent["max_tokens"] == 7
    assistant, tool = sent["messages"][2], sent["messages"][3]
    assert assistant["tool_calls"][0] == {"id": "c1", "type": "function",
                                          "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    assert assistant["tool_calls"][1]["function"]["arguments"] == "{oops"  # verbatim, as the model wrote it
    assert tool == {"role": "tool", "content": "Sunny", "tool_call_id": "c1", "name": "get_weather"}


async def test_timeout_is_retryable_and_named_after_the_exception(fake: FakeOpenAI) -> None:
    fake.enqueue(TextReply("too late", delay_s=1.0))
    llm = adapter("m", fake.base_url, timeout_s=0.1)
    with pytest.raises(LLMError) as info:
        await llm.complete(MSGS)
    assert info.value.retryable and info.value.error_type == "ReadTimeout"


async def test_refused_connection_is_retryable(caplog: pytest.LogCaptureFixture) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    llm = adapter("m", f"http://127.0.0.1:{port}/v1", api_key="sk-never-leak", timeout_s=2)
    resilient = ResilientLLM([llm], max_attempts_per_model=2, backoff_initial_s=0.001, sleep=Sleeps())
    with caplog.at_level(logging.DEBUG), pytest.raises(LLMUnavailable) as info:
        await resilient.complete(MSGS)
    assert [a.error_type for a in info.value.attempts] == ["ConnectError", "ConnectError"]
    for text in (caplog.text, str(info.value), repr(info.value.__cause__), repr(llm)):
        assert "sk-never-leak" not in text


async def test_rate_limit_retry_after_header_is_read(fake: FakeOpenAI) -> None:
    fake.enqueue(HttpErrorReply(429, "slow down", "rate_limit_error", code="rate_limit_exceeded",
                                headers={"retry-after-ms": "250"}), TextReply("ok"))
    llm, sleeps = chain(fake, "m")
    assert (await llm.complete(MSGS)).text == "ok"
    assert sleeps.waits == [0.25]
    assert llm.last_attempts[0].error_type == "rate_limit_exceeded"


async def test_key_comes_from_the_named_env_var(fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_PROVIDER_KEY", "sk-from-env")
    await adapter("m", fake.base_url, api_key_env="MY_PROVIDER_KEY").complete(MSGS)
    assert fake.request_headers[-1]["authorization"] == "Bearer sk-from-env"
    monkeypatch.delenv("MY_PROVIDER_KEY")
    await adapter("m", fake.base_url, api_key_env="MY_PROVIDER_KEY").complete(MSGS)
    assert "authorization" not in fake.request_headers[-1]
