"""`GET /api/prices`: the model price table behind every cost number, with its date and sources."""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends

from ingest.api.access import ReadAccess
from ingest.api.analytics_models import ModelPriceOut, Prices
from tracer.pricing import PriceTable


def add_price_routes(router: APIRouter, read_access: Callable[..., Any], prices: PriceTable) -> None:
    @router.get("/prices", response_model=Prices, summary="The model price table (USD per million tokens)")
    def get_prices(access: Annotated[ReadAccess, Depends(read_access)]) -> Prices:
        return Prices(
            as_of=prices.as_of,
            sources=list(prices.sources),
            models=[
                ModelPriceOut(
                    model=p.model,
                    input_per_mtok=p.input_per_mtok,
                    output_per_mtok=p.output_per_mtok,
                    cached_input_per_mtok=p.cached_input_per_mtok,
                    cache_write_per_mtok=p.cache_write_per_mtok,
                    reasoning_output_per_mtok=p.reasoning_output_per_mtok,
                )
                for p in prices.models()
            ],
        )
