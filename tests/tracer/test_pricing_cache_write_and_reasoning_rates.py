"""Cache-write and reasoning tokens are priced at their own rates where the provider prices them
(Anthropic cache writes in the bundled table; reasoning rates from a user file), at the input /
output rate otherwise, never twice and never negative."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracer.pricing import ModelPrice, PriceTable, PriceTableError, cost_usd, default_table


def test_bundled_anthropic_cache_writes_cost_one_and_a_quarter_input():
    for model in ("claude-sonnet-4-5", "claude-3-5-haiku", "claude-opus-4-1"):
        price = default_table().lookup(model)
        assert price is not None and price.cache_write_per_mtok == pytest.approx(1.25 * price.input_per_mtok)
    # sonnet 4.5: 3.00 in, 0.30 cache read, 3.75 cache write, 15.00 out
    got = cost_usd("claude-sonnet-4-5-20250929", 1000, 100, cached_input_tokens=300, cache_write_tokens=200)
    assert got == pytest.approx((500 * 3.0 + 300 * 0.30 + 200 * 3.75 + 100 * 15.0) / 1e6)


def test_cache_writes_without_a_write_rate_cost_the_input_rate():
    assert default_table().lookup("gpt-4o").cache_write_per_mtok is None
    assert cost_usd("gpt-4o", 1000, 0, cache_write_tokens=400) == pytest.approx(cost_usd("gpt-4o", 1000, 0))


def test_parts_are_clamped_to_their_totals():
    price = ModelPrice("m", 1.0, 2.0, cached_input_per_mtok=0.5, cache_write_per_mtok=4.0, reasoning_output_per_mtok=8.0)
    # reads take what they can first, writes only what is left of the input
    assert price.cost_usd(1_000_000, 0, 600_000, 900_000) == pytest.approx(0.6 * 0.5 + 0.4 * 4.0)
    assert price.cost_usd(0, 1_000_000, reasoning_tokens=5_000_000) == pytest.approx(8.0)
    assert price.cost_usd(10, 10, -1, -1, -1) == pytest.approx((10 * 1.0 + 10 * 2.0) / 1e6)


def test_reasoning_rate_from_a_user_file(tmp_path: Path):
    override = tmp_path / "prices.toml"
    override.write_text(
        '[models."thinker-1"]\ninput = 1.0\noutput = 2.0\nreasoning_output = 6.0\ncache_write = 1.5\n',
        encoding="utf-8",
    )
    table = PriceTable.load(override)
    assert table.cost_usd("thinker-1", 0, 1_000_000, reasoning_tokens=250_000) == pytest.approx(0.75 * 2.0 + 0.25 * 6.0)
    assert table.lookup("thinker-1").cache_write_per_mtok == 1.5
    # nobody in the bundled table prices reasoning apart from output (as of its date)
    assert all(p.reasoning_output_per_mtok is None for p in default_table().models())


def test_bad_rates_are_refused_with_the_entry_named(tmp_path: Path):
    override = tmp_path / "prices.toml"
    override.write_text('[models."x"]\ninput = 1.0\noutput = 2.0\ncache_write = -1\n', encoding="utf-8")
    with pytest.raises(PriceTableError, match="cache_write"):
        PriceTable.load(override)
