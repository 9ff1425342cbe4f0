"""One model price table shared by the kernel (budgets) and ingest (cost of foreign spans).

Why it lives in `tracer/`: the kernel may not import ingest and ingest may import tracer, so this
is the only place both can reach. It uses only the standard library (`tomllib`) for that reason.

Why the lookup is strict: a cost is only useful if it is right. A dated snapshot
(`gpt-4o-mini-2024-07-18`) or a provider-prefixed id (`openai/gpt-4o`) resolves to its base model,
but a *different* model that merely shares a prefix (`gpt-4o-audio-preview`, `gpt-4o` vs
`gpt-4o-mini`) never does: an unknown model gets no price (None) rather than a wrong one.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["ModelPrice", "PriceTable", "PriceTableError", "cost_usd", "default_table"]

_BUNDLED = "prices.toml"
_MTOK = 1_000_000.0

# Provider/route prefixes that do not change the model: "openai/gpt-4o" (OpenRouter, LiteLLM),
# "models/gemini-1.5-pro" (Google), "anthropic.claude-..." and "us.anthropic.claude-..." (Bedrock).
_SLASH_PREFIX = re.compile(r"^.*/")
_DOT_VENDOR_PREFIX = re.compile(
    r"^(?:(?:us|eu|apac|global)\.)?(?:anthropic|mistral|meta|amazon|cohere|deepseek|qwen|google|openai)\."
)
# What may follow a known id for it to still be "the same model": separators and version tokens
# (dates, snapshot numbers, `latest`, `preview`, `exp`, Bedrock `v1:0`, Vertex `@20240620`).
_SEPARATORS = "-@:_"
_VERSION_TOKEN = re.compile(r"^(?:\d+|v\d+|latest|preview|exp|experimental)$")
_SPLIT = re.compile(r"[-@:._]")
_SHORT_NUMBER = re.compile(r"^\d{1,2}$")


class PriceTableError(ValueError):
    """A price file that cannot be used; the message names the file and the offending entry."""


@dataclass(frozen=True)
class ModelPrice:
    """List price of one model in USD per million tokens.

    `cached_input_per_mtok` is None when the provider has no discounted cache-read price; cached
    tokens are then charged at the input rate. `cache_write_per_mtok` is the price of prompt tokens
    written to the provider's cache (Anthropic charges a surcharge for them), None when writes cost
    the input rate. `reasoning_output_per_mtok` is the price of reasoning ("thinking") output
    tokens where a provider prices them apart from other output, None when they cost the output rate.
    """

    model: str
    input_per_mtok: float
    output_per_mtok: float
    cached_input_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None
    reasoning_output_per_mtok: float | None = None

    def cost_usd(
        self,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
    ) -> float:
        """Cost of one call (OTel GenAI semantics: cache-read and cache-write tokens are subsets of
        the input tokens, reasoning tokens a subset of the output tokens; each is clamped to what
        is left of its total, so inconsistent counts can never make a cost negative)."""
        inp = max(int(input_tokens or 0), 0)
        out = max(int(output_tokens or 0), 0)
        cached = min(max(int(cached_input_tokens or 0), 0), inp)
        input_rate = self.input_per_mtok
        output_rate = self.output_per_mtok
        cached_rate = input_rate if self.cached_input_per_mtok is None else self.cached_input_per_mtok
        if not cache_write_tokens and not reasoning_tokens:  # most calls: no parts at their own rates
            return ((inp - cached) * input_rate + cached * cached_rate + out * output_rate) / _MTOK
        written = min(max(int(cache_write_tokens or 0), 0), inp - cached)
        reasoning = min(max(int(reasoning_tokens or 0), 0), out)
        write_rate = input_rate if self.cache_write_per_mtok is None else self.cache_write_per_mtok
        reasoning_rate = output_rate if self.reasoning_output_per_mtok is None else self.reasoning_output_per_mtok
        return (
            (inp - cached - written) * input_rate
            + cached * cached_rate
            + written * write_rate
            + (out - reasoning) * output_rate
            + reasoning * reasoning_rate
        ) / _MTOK


def normalize_model_id(model: str) -> str:
    """Lowercase, trimmed, without provider/route prefixes."""
    name = model.strip().lower()
    name = _SLASH_PREFIX.sub("", name)
    return _DOT_VENDOR_PREFIX.sub("", name)


def _is_version_suffix(rest: str) -> bool:
    """True when `rest` (what follows a known id) names a snapshot of it, not another model.

    A leading "." or a short number right after the id is a newer model version
    (`gpt-4` + `.5-preview`, `claude-opus-4` + `-5-20251101`), so neither matches.
    """
    if not rest:
        return True
    if rest[0] not in _SEPARATORS:
        return False
    tokens = [t for t in _SPLIT.split(rest[1:]) if t]
    if not tokens or _SHORT_NUMBER.match(tokens[0]):
        return False
    return all(_VERSION_TOKEN.match(t) for t in tokens)


class PriceTable:
    """An immutable, dated set of model prices with tolerant but never-wrong lookup."""

    def __init__(self, prices: dict[str, ModelPrice], as_of: str, sources: tuple[str, ...] = ()) -> None:
        self.as_of = as_of
        self.sources = sources
        self._prices = dict(prices)  # normalized id (or alias) -> price
        # Longest first, so the first id that matches is the most specific one.
        self._ids_by_length = sorted(self._prices, key=len, reverse=True)
        self._cache: dict[str, ModelPrice | None] = {}

    # ---------------------------------------------------------------- loading
    @classmethod
    def load(cls, override_path: Path | None = None) -> PriceTable:
        """The bundled table, with entries of `override_path` (same TOML shape) replacing or adding.

        The override's `as_of`, when present, becomes the table's date, because the user file is
        then the newest information in it.
        """
        bundled_text = resources.files("tracer").joinpath(_BUNDLED).read_text(encoding="utf-8")
        data = _parse(bundled_text, f"tracer/{_BUNDLED}")
        prices, as_of = _entries(data, f"tracer/{_BUNDLED}")
        sources = [f"bundled:{_BUNDLED}"]
        if override_path is not None:
            path = Path(override_path)
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise PriceTableError(f"cannot read price file {path}: {exc}") from exc
            extra, extra_as_of = _entries(_parse(text, str(path)), str(path), require_as_of=False)
            prices.update(extra)
            as_of = extra_as_of or as_of
            sources.append(str(path))
        return cls(prices, as_of=as_of, sources=tuple(sources))

    # ---------------------------------------------------------------- queries
    def lookup(self, model: str) -> ModelPrice | None:
        """Price of `model`, tolerant of snapshots and provider prefixes; None when unknown."""
        if not model:
            return None
        hit = self._cache.get(model, _MISSING)
        if hit is not _MISSING:
            return hit  # type: ignore[return-value]
        name = normalize_model_id(model)
        found = self._prices.get(name)
        if found is None:
            for known in self._ids_by_length:
                if name.startswith(known) and _is_version_suffix(name[len(known) :]):
                    found = self._prices[known]
                    break
        if len(self._cache) < 4096:  # model ids are few; bound it anyway against junk input
            self._cache[model] = found
        return found

    def cost_usd(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
    ) -> float | None:
        """USD cost of one call, or None when the model has no known price."""
        price = self.lookup(model)
        if price is None:
            return None
        return price.cost_usd(input_tokens, output_tokens, cached_input_tokens, cache_write_tokens, reasoning_tokens)

    def models(self) -> list[ModelPrice]:
        """Every priced model once (aliases folded), sorted by id."""
        unique = {p.model: p for p in self._prices.values()}
        return [unique[k] for k in sorted(unique)]


_MISSING = object()


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PriceTableError(f"{where}: invalid TOML: {exc}") from exc


def _rate(entry: dict[str, Any], key: str, where: str, required: bool) -> float | None:
    value = entry.get(key)
    if value is None:
        if required:
            raise PriceTableError(f"{where}: missing '{key}'")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise PriceTableError(f"{where}: '{key}' must be a non-negative number, got {value!r}")
    return float(value)


def _entries(
    data: dict[str, Any], where: str, require_as_of: bool = True
) -> tuple[dict[str, ModelPrice], str]:
    as_of = data.get("as_of")
    if as_of is not None and not isinstance(as_of, str):
        as_of = str(as_of)  # a bare TOML date parses as datetime.date
    if require_as_of and not as_of:
        raise PriceTableError(f"{where}: missing 'as_of' date")
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise PriceTableError(f"{where}: 'models' must be a table")
    out: dict[str, ModelPrice] = {}
    for raw_id, entry in models.items():
        here = f"{where}: models.{raw_id!r}"
        if not isinstance(entry, dict):
            raise PriceTableError(f"{here} must be a table")
        model_id = normalize_model_id(raw_id)
        price = ModelPrice(
            model=model_id,
            input_per_mtok=_rate(entry, "input", here, True),  # type: ignore[arg-type]
            output_per_mtok=_rate(entry, "output", here, True),  # type: ignore[arg-type]
            cached_input_per_mtok=_rate(entry, "cached_input", here, False),
            cache_write_per_mtok=_rate(entry, "cache_write", here, False),
            reasoning_output_per_mtok=_rate(entry, "reasoning_output", here, False),
        )
        out[model_id] = price
        aliases = entry.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise PriceTableError(f"{here}: 'aliases' must be a list of strings")
        for alias in aliases:
            out[normalize_model_id(alias)] = price
    return out, as_of or ""


@lru_cache(maxsize=1)
def default_table() -> PriceTable:
    """The bundled table, loaded once per process."""
    return PriceTable.load()


def cost_usd(
    model: str,
    input_tokens: int,
    output_tokens: int,
    cached_input_tokens: int = 0,
    cache_write_tokens: int = 0,
    reasoning_tokens: int = 0,
) -> float | None:
    """Cost of one call by the bundled table; None when the model has no known price."""
    return default_table().cost_usd(
        model, input_tokens, output_tokens, cached_input_tokens, cache_write_tokens, reasoning_tokens
    )
