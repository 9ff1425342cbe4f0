"""Reasoning and cache-creation tokens by every convention's spelling (OTel GenAI, OpenInference,
OpenLLMetry) land in their columns and are priced at their own rates; a cost the client sent is
kept as the cost (cost_source 'client'), below steplens' own and above the price table; a
provider-prefixed model id prices as the model; time to first chunk and streaming are kept."""

from __future__ import annotations

import pytest

from tracer import conventions as c

SONNET = "claude-sonnet-4-5"  # input 3.00, cached 0.30, cache write 3.75, output 15.00 per Mtok


def _row(capture, attrs: dict, name: str = "call") -> dict:
    with capture.tracer("t").start_as_current_span(name, attributes=attrs):
        pass
    (row,) = [r for r in capture.rows() if r["name"] == name]
    return row


def _usage_cost(inp: int, read: int, write: int, out: int) -> float:
    return ((inp - read - write) * 3.0 + read * 0.30 + write * 3.75 + out * 15.0) / 1e6


@pytest.mark.parametrize(
    ("convention", "attrs"),
    [
        ("otel_genai", {
            c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_REQUEST_MODEL: SONNET,
            c.GEN_AI_USAGE_INPUT_TOKENS: 1000, c.GEN_AI_USAGE_OUTPUT_TOKENS: 100,
            c.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 300, c.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: 200,
            c.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: 40,
        }),
        ("openinference", {
            c.OI_SPAN_KIND: "LLM", c.OI_LLM_MODEL_NAME: SONNET,
            c.OI_TOKEN_PROMPT: 1000, c.OI_TOKEN_COMPLETION: 100,
            c.OI_TOKEN_CACHE_READ: 300, c.OI_TOKEN_CACHE_WRITE: 200, c.OI_TOKEN_REASONING: 40,
        }),
        ("openllmetry", {
            c.LLM_REQUEST_TYPE: "chat", c.GEN_AI_REQUEST_MODEL: SONNET,
            c.LLM_USAGE_PROMPT_TOKENS: 1000, c.LLM_USAGE_COMPLETION_TOKENS: 100,
            c.TRACELOOP_USAGE_CACHE_READ_INPUT_TOKENS: 300, c.TRACELOOP_USAGE_CACHE_CREATION_INPUT_TOKENS: 200,
            c.TRACELOOP_USAGE_REASONING_TOKENS: 40,
        }),
        ("openllmetry_llm_usage", {
            c.LLM_REQUEST_TYPE: "chat", c.GEN_AI_REQUEST_MODEL: SONNET,
            c.LLM_USAGE_PROMPT_TOKENS: 1000, c.LLM_USAGE_COMPLETION_TOKENS: 100,
            c.TRACELOOP_USAGE_CACHE_READ_INPUT_TOKENS: 300, c.TRACELOOP_USAGE_CACHE_CREATION_INPUT_TOKENS: 200,
            c.LLM_USAGE_REASONING_TOKENS: 40,
        }),
    ],
)  # fmt: skip
def test_cache_write_and_reasoning_columns_and_price(capture, convention, attrs):
    row = _row(capture, attrs)
    assert (row["input_tokens"], row["cache_read_tokens"], row["cache_creation_tokens"]) == (1000, 300, 200)
    assert (row["output_tokens"], row["reasoning_tokens"]) == (100, 40)
    assert row["cost_source"] == "price_table"
    assert row["cost_usd"] == pytest.approx(_usage_cost(1000, 300, 200, 100))


def test_client_cost_is_kept_with_its_source_and_ours_still_wins(capture):
    base = {c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_REQUEST_MODEL: "gpt-4o", c.GEN_AI_USAGE_INPUT_TOKENS: 1000}
    litellm = _row(capture, {**base, c.GEN_AI_USAGE_COST: 0.0123}, "litellm")
    assert (litellm["cost_usd"], litellm["cost_source"]) == (0.0123, "client")
    oi = _row(capture, {c.OI_SPAN_KIND: "LLM", c.OI_TOKEN_PROMPT: 10, c.OI_COST_TOTAL: 0.002}, "oi")
    assert (oi["cost_usd"], oi["cost_source"]) == (0.002, "client")
    ours = _row(capture, {**base, c.GEN_AI_USAGE_COST: 0.0123, c.COST_USD: 0.5}, "ours")
    assert (ours["cost_usd"], ours["cost_source"]) == (0.5, "span")
    junk = _row(capture, {**base, c.GEN_AI_USAGE_COST: "n/a"}, "junk")  # unreadable: the table prices it
    assert (junk["cost_usd"], junk["cost_source"]) == (pytest.approx(1000 * 2.5 / 1e6), "price_table")
    negative = _row(capture, {**base, c.GEN_AI_USAGE_COST: -1.0}, "negative")
    assert negative["cost_source"] == "price_table"


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "litellm_proxy/openai/gpt-4o-mini", "gpt-4o-mini-2024-07-18"])
def test_provider_prefixed_model_prices_as_the_model(capture, model):
    attrs = {
        c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_REQUEST_MODEL: model,
        c.GEN_AI_USAGE_INPUT_TOKENS: 1_000_000, c.GEN_AI_USAGE_OUTPUT_TOKENS: 1_000_000,
    }  # fmt: skip
    row = _row(capture, attrs)
    assert row["model"] == model  # stored as sent
    assert (row["cost_usd"], row["cost_source"]) == (pytest.approx(0.15 + 0.60), "price_table")


def test_time_to_first_chunk_and_stream(capture):
    attrs = {
        c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_REQUEST_MODEL: "gpt-4o",
        c.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: 0.25, c.GEN_AI_REQUEST_STREAM: True,
    }  # fmt: skip
    row = _row(capture, attrs)
    assert (row["time_to_first_chunk_ms"], row["stream"]) == (250.0, True)
    odd = _row(capture, {**attrs, c.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: -1, c.GEN_AI_REQUEST_STREAM: "no"}, "odd")
    assert (odd["time_to_first_chunk_ms"], odd["stream"]) == (None, None)
    tool = _row(capture, {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: 1}, "tool")
    assert tool["time_to_first_chunk_ms"] is None  # a model-call fact only


def test_langfuse_usage_in_the_providers_own_shape(capture):
    """The Langfuse OpenAI integration passes OpenAI's usage object through (totals inclusive)."""
    usage = (
        '{"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100,'
        ' "prompt_tokens_details": {"cached_tokens": 400}, "completion_tokens_details": {"reasoning_tokens": 60}}'
    )
    attrs = {
        c.LANGFUSE_OBSERVATION_TYPE: "generation", c.LANGFUSE_OBSERVATION_MODEL: "openai/gpt-4o",
        c.LANGFUSE_OBSERVATION_USAGE_DETAILS: usage, c.LANGFUSE_OBSERVATION_COST_DETAILS: "not json",
    }  # fmt: skip
    row = _row(capture, attrs)
    assert (row["input_tokens"], row["cache_read_tokens"], row["output_tokens"], row["reasoning_tokens"]) == (
        1000, 400, 100, 60,
    )  # fmt: skip
    assert row["cost_usd"] == pytest.approx((600 * 2.5 + 400 * 1.25 + 100 * 10.0) / 1e6)
