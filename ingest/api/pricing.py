"""The price table the query API uses, and pricing of re-sent (carry) tokens.

Why price carry at query time: the load-time tables keep re-sent token counts per model, so a
corrected or user-overridden price table (Settings.price_file) applies to past runs too, and the
API answers with the table's date so every number can be traced to the prices behind it.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracer.pricing import PriceTable

_MTOK = 1_000_000.0


def table_for(store: object, prices: PriceTable | None) -> PriceTable:
    """`prices`, else the table ingest itself uses: bundled plus the store's `price_file` override."""
    if prices is not None:
        return prices
    settings = getattr(store, "settings", None)
    return PriceTable.load(getattr(settings, "price_file", None))


@dataclass(frozen=True)
class CarryCost:
    usd: float
    tokens: int
    unpriced_tokens: int  # re-sent to models the table has no price for (left out of `usd`)


def price_carry(prices: PriceTable, tokens_by_model: dict[str, int]) -> CarryCost:
    """Re-sent tokens per model ('' = unknown model) priced at each model's input price."""
    usd = 0.0
    total = unpriced = 0
    for model, tokens in tokens_by_model.items():
        total += tokens
        price = prices.lookup(model) if model else None
        if price is None:
            unpriced += tokens
        else:
            usd += tokens * price.input_per_mtok / _MTOK
    return CarryCost(usd=usd, tokens=total, unpriced_tokens=unpriced)


def price_table_info(prices: PriceTable) -> dict[str, str]:
    return {"as_of": prices.as_of, "sources": ", ".join(prices.sources)}
