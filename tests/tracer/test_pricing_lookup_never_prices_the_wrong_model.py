"""A cost is only useful if it is the right model's: tolerant lookup must never drift to a sibling."""

from __future__ import annotations

import pytest

from tracer.pricing import PriceTable, default_table


@pytest.fixture(scope="module")
def table() -> PriceTable:
    return default_table()


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        ("gpt-4o", "gpt-4o"),
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("openai/gpt-4o", "gpt-4o"),
        ("openai/gpt-4o-mini", "gpt-4o-mini"),
        ("GPT-4o", "gpt-4o"),
        ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("gpt-4.1", "gpt-4.1"),
        ("gpt-4-0613", "gpt-4"),
        ("gpt-4-turbo-2024-04-09", "gpt-4-turbo"),
        ("o3-mini-2025-01-31", "o3-mini"),
        ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
        ("anthropic/claude-3.5-sonnet", "claude-3-5-sonnet"),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),
        ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet"),
        ("claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("models/gemini-2.0-flash-001", "gemini-2.0-flash"),
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
        ("gemini-2.5-pro-preview-05-06", "gemini-2.5-pro"),
        ("mistral-large-latest", "mistral-large"),
        ("deepseek-chat", "deepseek-chat"),
        ("qwen-max-2025-01-25", "qwen-max"),
    ],
)
def test_snapshots_and_prefixes_resolve_to_their_base_model(table: PriceTable, requested: str, expected: str):
    price = table.lookup(requested)
    assert price is not None, requested
    assert price.model == expected


def test_gpt_4o_and_gpt_4o_mini_are_different_prices(table: PriceTable):
    big, small = table.lookup("gpt-4o"), table.lookup("gpt-4o-mini-2024-07-18")
    assert big is not None and small is not None
    assert big.input_per_mtok > small.input_per_mtok
    assert table.cost_usd("gpt-4o", 1000, 1000) > table.cost_usd("gpt-4o-mini", 1000, 1000)


@pytest.mark.parametrize(
    "requested",
    [
        "gpt-4o-audio-preview",  # a different product sharing the prefix
        "gpt-4.5-preview",  # a newer version of gpt-4, not a snapshot of it
        "claude-opus-4-5-20251101",  # newer than claude-opus-4, not priced like it
        "gpt-4-32k",
        "gpt-4omni",
        "my-local-llama",
        "",
    ],
)
def test_unknown_or_different_models_get_no_price(table: PriceTable, requested: str):
    assert table.lookup(requested) is None
    assert table.cost_usd(requested, 100, 100) is None
