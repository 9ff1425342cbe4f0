"""The fake server must be faithful enough that the real `openai` client parses every reply."""

from __future__ import annotations

import json

import openai
import pytest

from tests.support.fake_openai import (
    FakeOpenAI,
    HttpErrorReply,
    TextReply,
    ToolCallSpec,
    ToolCallsReply,
    Usage,
    fake_openai,  # noqa: F401  (fixture)
    malformed_tool_call,
)

MSG = [{"role": "user", "content": "hi"}]


def _client(fake: FakeOpenAI) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)


def test_default_reply_is_deterministic_text(fake_openai: FakeOpenAI):  # noqa: F811
    client = _client(fake_openai)
    a = client.chat.completions.create(model="gpt-4o-mini", messages=MSG)
    b = client.chat.completions.create(model="gpt-4o-mini", messages=MSG)
    assert a.choices[0].message.content == b.choices[0].message.content
    assert a.choices[0].finish_reason == "stop"
    assert a.usage.prompt_tokens == 10 and a.usage.completion_tokens == 5
    assert fake_openai.base_url.startswith("http://127.0.0.1:") and fake_openai.port != 0


def test_tool_calls_malformed_arguments_and_recorded_bodies(fake_openai: FakeOpenAI):  # noqa: F811
    fake_openai.enqueue(
        ToolCallsReply(
            [ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_time", {"tz": "CET"})]
        ),
        malformed_tool_call("get_weather", '{"city": '),
    )
    client = _client(fake_openai)
    first = client.chat.completions.create(model="gpt-4o-mini", messages=MSG, temperature=0.2)
    calls = first.choices[0].message.tool_calls
    assert [c.function.name for c in calls] == ["get_weather", "get_time"]
    assert json.loads(calls[0].function.arguments) == {"city": "Paris"}
    assert first.choices[0].finish_reason == "tool_calls"
    second = client.chat.completions.create(model="gpt-4o-mini", messages=MSG)
    with pytest.raises(json.JSONDecodeError):
        json.loads(second.choices[0].message.tool_calls[0].function.arguments)
    assert [r["temperature"] for r in fake_openai.requests[:1]] == [0.2]
    assert len(fake_openai.requests) == 2


def test_per_model_behaviour_fails_one_model_only(fake_openai: FakeOpenAI):  # noqa: F811
    fake_openai.always("gpt-4.1-mini", HttpErrorReply(500, "boom"))
    fake_openai.enqueue(
        HttpErrorReply(429, "slow down", "rate_limit_error", "rate_limit_exceeded"), model="b"
    )
    client = _client(fake_openai)
    with pytest.raises(openai.InternalServerError) as err:
        client.chat.completions.create(model="gpt-4.1-mini", messages=MSG)
    assert err.value.status_code == 500 and "boom" in str(err.value)
    assert client.chat.completions.create(model="gpt-4o-mini", messages=MSG).choices[0].message.content
    with pytest.raises(openai.RateLimitError) as rl:
        client.chat.completions.create(model="b", messages=MSG)
    assert rl.value.code == "rate_limit_exceeded"
    assert client.chat.completions.create(model="b", messages=MSG).choices[0].message.content


def test_stream_with_usage_and_streamed_tool_calls(fake_openai: FakeOpenAI):  # noqa: F811
    fake_openai.enqueue(
        TextReply("one two three", usage=Usage(7, 3, 2), response_model="gpt-4o-mini-2024-07-18"),
        ToolCallsReply([ToolCallSpec("a", {"x": 1}), ToolCallSpec("b", {"y": 2})]),
    )
    client = _client(fake_openai)
    chunks = list(
        client.chat.completions.create(
            model="gpt-4o-mini", messages=MSG, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three"
    assert chunks[-1].usage.prompt_tokens == 7 and chunks[-1].usage.prompt_tokens_details.cached_tokens == 2
    assert chunks[0].model == "gpt-4o-mini-2024-07-18"
    args: dict[int, str] = {}
    for c in client.chat.completions.create(model="gpt-4o-mini", messages=MSG, stream=True):
        assert c.usage is None
        for tc in (c.choices[0].delta.tool_calls or []) if c.choices else []:
            args[tc.index] = args.get(tc.index, "") + (tc.function.arguments or "")
    assert {i: json.loads(a) for i, a in args.items()} == {0: {"x": 1}, 1: {"y": 2}}
