"""Whatever a provider or a proxy in front of it sends back, the adapter answers with data: a
response (possibly with `format_error`) or a classified `LLMError` — never a stray exception."""

from __future__ import annotations

import json
import time
from email.utils import formatdate

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.llm import LLMError, ResilientLLM
from kernel.llm.openai_compat import parse_retry_after, parse_tool_calls
from kernel.types import Message
from tests.kernel.openai_adapters import adapter
from tests.support.fake_openai import FakeOpenAI, HttpErrorReply, RawReply, TextReply

MSGS = [Message(role="user", content="hello there")]




def completion(message: dict, **extra: object) -> bytes:
    return json.dumps({"model": "m", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                       **extra}).encode()


async def _error_of(fake: FakeOpenAI, reply: RawReply | HttpErrorReply) -> LLMError:
    fake.enqueue(reply)
    with pytest.raises(LLMError) as info:
        await adapter("m", fake.base_url).complete(MSGS)
    return info.value


@pytest.mark.parametrize("body", [b"<html>oops</html>", b"[1, 2]", b'{"choices": []}', b'{"choices": [7]}', b""])
async def test_broken_200_bodies_are_retryable_invalid_response(fake: FakeOpenAI, body: bytes) -> None:
    err = await _error_of(fake, RawReply(200, body))
    assert err.error_type == "invalid_response" and err.retryable


async def test_broken_body_is_retried_by_the_resilient_layer(fake: FakeOpenAI) -> None:
    fake.enqueue(RawReply(200, b"{truncated"), TextReply("fine"))

    async def no_sleep(_: float) -> None:
        return None

    llm = ResilientLLM([adapter("m", fake.base_url)], sleep=no_sleep)
    assert (await llm.complete(MSGS)).text == "fine"
    assert [a.error_type for a in llm.last_attempts] == ["invalid_response", None]


async def test_proxy_html_502_is_retryable_and_named_by_class(fake: FakeOpenAI) -> None:
    err = await _error_of(fake, RawReply(502, b"<html>Bad Gateway</html>", media_type="text/html"))
    assert (err.error_type, err.retryable, err.status_code) == ("HTTPStatusError", True, 502)
    assert "Bad Gateway" in str(err)


async def test_auth_failure_is_not_retried_but_allows_fallback(fake: FakeOpenAI) -> None:
    err = await _error_of(fake, HttpErrorReply(401, "Incorrect API key", "invalid_request_error",
                                               code="invalid_api_key"))
    assert (err.error_type, err.retryable, err.model_level) == ("invalid_api_key", False, True)


async def test_numeric_or_missing_error_codes_still_give_a_type(fake: FakeOpenAI) -> None:
    err = await _error_of(fake, RawReply(503, json.dumps({"error": {"code": 503, "message": "busy"}}).encode()))
    assert err.error_type == "503" and err.retryable and "busy" in str(err)
    err = await _error_of(fake, RawReply(400, json.dumps({"error": "plain string"}).encode()))
    assert err.error_type == "HTTPStatusError" and not err.retryable and not err.model_level


async def test_content_parts_and_missing_usage_are_handled(fake: FakeOpenAI) -> None:
    fake.enqueue(RawReply(200, completion({"role": "assistant",
                                           "content": [{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo"}]})))
    resp = await adapter("m", fake.base_url).complete(MSGS)
    assert resp.text == "Hello"
    assert resp.usage is not None and resp.usage.estimated and resp.usage.input_tokens == 3


async def test_tool_call_without_a_name_is_a_format_error(fake: FakeOpenAI) -> None:
    fake.enqueue(RawReply(200, completion({"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": {"arguments": "{}"}}, {"id": "x"}]})))
    resp = await adapter("m", fake.base_url).complete(MSGS)
    assert resp.format_error is not None
    assert "no function name" in resp.format_error and "no function object" in resp.format_error
    assert resp.tool_calls[0].id == "call_0"


def test_retry_after_forms() -> None:
    assert parse_retry_after(httpx.Headers({"retry-after": "3"})) == 3.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    future = formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (parse_retry_after(httpx.Headers({"retry-after": future})) or 0) <= 31
    assert parse_retry_after(httpx.Headers({"retry-after": "soon-ish"})) is None
    assert parse_retry_after(httpx.Headers({})) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
call_like = st.fixed_dictionaries(
    {}, optional={"id": json_values, "type": json_values,
                  "function": st.fixed_dictionaries({}, optional={"name": json_values, "arguments": json_values})})


@settings(max_examples=200, deadline=None)
@given(st.one_of(json_values, st.lists(st.one_of(call_like, json_values), max_size=4)))
def test_parse_tool_calls_never_raises(raw: object) -> None:
    calls, problems = parse_tool_calls(raw)
    assert all(isinstance(c.arguments, dict) for c in calls)
    assert all(isinstance(p, str) for p in problems)
