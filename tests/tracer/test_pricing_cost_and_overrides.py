"""Cost arithmetic (cached tokens are part of input) and the user override file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracer.pricing import ModelPrice, PriceTable, PriceTableError, cost_usd, default_table


def test_cached_tokens_are_priced_at_the_cached_rate_and_not_twice():
    # gpt-4o list: 2.50 in, 1.25 cached, 10.00 out per Mtok
    got = cost_usd("gpt-4o", input_tokens=1000, output_tokens=500, cached_input_tokens=200)
    assert got == pytest.approx((800 * 2.50 + 200 * 1.25 + 500 * 10.00) / 1e6)


def test_cached_tokens_without_a_cached_rate_cost_the_input_rate():
    price = ModelPrice("m", input_per_mtok=1.0, output_per_mtok=2.0, cached_input_per_mtok=None)
    assert price.cost_usd(1_000_000, 0, 400_000) == pytest.approx(1.0)


def test_bad_token_counts_do_not_produce_negative_or_inflated_costs():
    price = ModelPrice("m", input_per_mtok=1.0, output_per_mtok=2.0, cached_input_per_mtok=0.5)
    assert price.cost_usd(-5, -5) == 0.0
    # more cached than input: capped at input, never above the uncached cost
    assert price.cost_usd(1_000_000, 0, 5_000_000) == pytest.approx(0.5)


def test_bundled_table_is_dated_and_covers_every_provider():
    table = default_table()
    assert len(table.as_of) == 10 and table.as_of[4] == "-"
    ids = {p.model for p in table.models()}
    for expected in (
        "gpt-4o",
        "claude-sonnet-4",
        "gemini-2.5-flash",
        "mistral-large",
        "deepseek-chat",
        "qwen-max",
    ):
        assert expected in ids
    assert default_table() is table  # cached


def test_override_replaces_and_adds_models_and_dates_the_table(tmp_path: Path):
    override = tmp_path / "prices.toml"
    override.write_text(
        'as_of = "2026-11-15"\n'
        '[models."gpt-4o"]\ninput = 1.0\noutput = 2.0\n'
        '[models."acme-7b"]\ninput = 0.01\noutput = 0.02\ncached_input = 0.001\n',
        encoding="utf-8",
    )
    table = PriceTable.load(override)
    assert table.as_of == "2026-11-15"
    assert str(override) in table.sources
    assert table.lookup("openai/gpt-4o-2024-08-06") == ModelPrice("gpt-4o", 1.0, 2.0, None)
    assert table.cost_usd("acme-7b-20260101", 1_000_000, 1_000_000) == pytest.approx(0.03)
    # untouched entries are still the bundled ones
    assert table.lookup("gpt-4o-mini") == default_table().lookup("gpt-4o-mini")


def test_override_without_a_date_keeps_the_bundled_date(tmp_path: Path):
    override = tmp_path / "p.toml"
    override.write_text('[models."x-1"]\ninput = 1\noutput = 1\n', encoding="utf-8")
    assert PriceTable.load(override).as_of == default_table().as_of


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("models = [", "invalid TOML"),
        ('[models."m"]\ninput = 1\n', "missing 'output'"),
        ('[models."m"]\ninput = -1\noutput = 1\n', "non-negative"),
        ('[models."m"]\ninput = "cheap"\noutput = 1\n', "non-negative"),
        ('[models."m"]\ninput = 1\noutput = 1\naliases = "x"\n', "aliases"),
    ],
)
def test_a_broken_override_is_refused_with_the_reason(tmp_path: Path, text: str, reason: str):
    override = tmp_path / "bad.toml"
    override.write_text(text, encoding="utf-8")
    with pytest.raises(PriceTableError, match=reason):
        PriceTable.load(override)


def test_a_missing_override_file_is_refused_not_ignored(tmp_path: Path):
    with pytest.raises(PriceTableError, match="cannot read"):
        PriceTable.load(tmp_path / "nope.toml")
