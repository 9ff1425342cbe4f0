"""Every LLM attempt is its own `chat {model}` span: retries carry `steplens.llm.attempt`,
fallbacks `steplens.llm.fallback_from`, failures ERROR with the provider's code. Checked over
ScriptedLLMs and over the real OpenAI-compatible adapter talking HTTP to the fake server. A plain
LLM (no ResilientLLM) gets exactly one chat span per call, also behind a Router."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.trace import StatusCode

from kernel.llm import LLMError, ResilientLLM, Router, ScriptedLLM
from kernel.llm.openai_compat import OpenAICompatLLM
from kernel.types import LLMResponse, Usage
from tests.support.fake_openai import FakeOpenAI, HttpErrorReply, TextReply
from tests.support.fake_openai import Usage as WireUsage
from tests.tracer.kernel.kernel_runs import agent, final, named, one, outline
from tracer import conventions as c


async def no_sleep(_: float) -> None:
    return None


def overloaded(messages, tools):
    return LLMError("upstream overloaded", error_type="overloaded_error", retryable=True, status_code=529)


async def test_retry_then_fallback_over_scripted_llms(memory_handle) -> None:
    primary = ScriptedLLM(policy=overloaded, model="claude-x", provider="anthropic")
    backup = ScriptedLLM([LLMResponse(text=final("ok"), model="gpt-4o-mini-2024-07-18",
                                      usage=Usage(input_tokens=50, output_tokens=5))],
                         model="gpt-4o-mini", provider="openai")
    llm = ResilientLLM([primary, backup], max_attempts_per_model=2, sleep=no_sleep)
    result = await agent(llm, temperature=0.0).run("t")
    assert result.ok
    finished = memory_handle.memory_exporter.get_finished_spans()
    assert outline(finished) == [
        "invoke_agent tester",
        "  step 1",
        "    budget_check",
        "    chat claude-x [CLIENT] !overloaded_error",
        "    chat claude-x [CLIENT] !overloaded_error",
        "    chat gpt-4o-mini [CLIENT]",
    ]
    first, second = named(finished, "chat claude-x")
    assert (first.attributes[c.LLM_ATTEMPT], second.attributes[c.LLM_ATTEMPT]) == (1, 2)
    for failed in (first, second):
        assert failed.status.status_code is StatusCode.ERROR
        assert failed.attributes[c.GEN_AI_PROVIDER_NAME] == "anthropic"
        assert c.LLM_FALLBACK_FROM not in failed.attributes and c.GEN_AI_USAGE_INPUT_TOKENS not in failed.attributes
        assert [e.name for e in failed.events] == ["exception"]
    ok = one(finished, "chat gpt-4o-mini")
    assert ok.attributes[c.LLM_FALLBACK_FROM] == "claude-x" and ok.attributes[c.LLM_ATTEMPT] == 1
    assert ok.attributes[c.GEN_AI_RESPONSE_MODEL] == "gpt-4o-mini-2024-07-18"
    assert ok.attributes[c.GEN_AI_USAGE_INPUT_TOKENS] == 50 and ok.attributes[c.GEN_AI_REQUEST_TEMPERATURE] == 0.0
    assert ok.attributes[c.COST_USD] == pytest.approx(result.cost_usd) and result.cost_usd > 0
    assert ok.attributes[c.GEN_AI_INPUT_MESSAGES] == first.attributes[c.GEN_AI_INPUT_MESSAGES]
    assert one(finished, "invoke_agent tester").attributes[c.GEN_AI_REQUEST_MODEL] == "claude-x"


async def test_whole_chain_down_is_llm_unavailable_with_every_attempt_visible(memory_handle) -> None:
    llm = ResilientLLM([ScriptedLLM(policy=overloaded, model="a"), ScriptedLLM(policy=overloaded, model="b")],
                       max_attempts_per_model=2, sleep=no_sleep)
    result = await agent(llm).run("t")
    assert result.stop_reason == "llm_unavailable"
    assert outline(memory_handle.memory_exporter.get_finished_spans()) == [
        "invoke_agent tester !llm_unavailable",
        "  step 1 !llm_unavailable",
        "    budget_check",
        "    chat a [CLIENT] !overloaded_error",
        "    chat a [CLIENT] !overloaded_error",
        "    chat b [CLIENT] !overloaded_error",
        "    chat b [CLIENT] !overloaded_error",
    ]


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


async def test_retry_then_fallback_over_real_http(memory_handle, fake_server: FakeOpenAI) -> None:
    fake_server.reset()
    fake_server.always("gpt-4.1-mini", HttpErrorReply(500))
    fake_server.enqueue(TextReply(final("sunny"), usage=WireUsage(prompt_tokens=120, completion_tokens=9)),
                        model="gpt-4o-mini")
    adapters = [OpenAICompatLLM(m, fake_server.base_url, api_key="sk-test-not-a-real-key-123456", timeout_s=5)
                for m in ("gpt-4.1-mini", "gpt-4o-mini")]
    llm = ResilientLLM(adapters, max_attempts_per_model=2, sleep=no_sleep)
    try:
        result = await agent(llm).run("weather in Paris?")
    finally:
        await llm.aclose()
    assert result.ok and result.answer == "sunny"
    finished = memory_handle.memory_exporter.get_finished_spans()
    assert outline(finished) == [
        "invoke_agent tester",
        "  step 1",
        "    budget_check",
        "    chat gpt-4.1-mini [CLIENT] !server_error",
        "    chat gpt-4.1-mini [CLIENT] !server_error",
        "    chat gpt-4o-mini [CLIENT]",
    ]
    ok = one(finished, "chat gpt-4o-mini")
    assert ok.attributes[c.GEN_AI_PROVIDER_NAME] == "openai" and ok.attributes[c.LLM_FALLBACK_FROM] == "gpt-4.1-mini"
    assert (ok.attributes[c.GEN_AI_USAGE_INPUT_TOKENS], ok.attributes[c.GEN_AI_USAGE_OUTPUT_TOKENS]) == (120, 9)
    assert ok.attributes[c.USAGE_ESTIMATED] is False
    assert [r["model"] for r in fake_server.requests] == ["gpt-4.1-mini", "gpt-4.1-mini", "gpt-4o-mini"]
    for span in finished:  # the API key never reaches a span
        assert "sk-test-not-a-real-key" not in f"{dict(span.attributes)} {span.status.description} {span.events}"


async def test_plain_llm_gets_one_chat_span_per_call_also_behind_a_router(memory_handle) -> None:
    cheap = ScriptedLLM([final("from cheap")], model="cheap")
    router = Router(ScriptedLLM([final("never")], model="strong"), rules=[(lambda purpose, m: True, cheap)])
    result = await agent(router).run("t")
    assert result.ok and result.answer == "from cheap"
    assert outline(memory_handle.memory_exporter.get_finished_spans()) == [
        "invoke_agent tester", "  step 1", "    budget_check", "    chat cheap [CLIENT]",
    ]


async def test_router_over_a_resilient_llm_is_not_double_wrapped(memory_handle) -> None:
    inner = ResilientLLM([ScriptedLLM([final("x")], model="m")], sleep=no_sleep)
    result = await agent(Router(inner)).run("t")
    assert result.ok
    assert outline(memory_handle.memory_exporter.get_finished_spans())[-1] == "    chat m [CLIENT]"
    assert len(named(memory_handle.memory_exporter.get_finished_spans(), "chat m")) == 1
