"""OTLP AnyValue → Python/JSON, and lenient coercions for promoted columns.

Why lenient: clients disagree on types (tokens as strings, booleans as "true", ints as doubles).
A promoted column takes what it can interpret and stays NULL otherwise; the raw value is always
kept in the attributes JSON, so nothing is lost and nothing crashes.
"""

from __future__ import annotations

import base64
import json
import math
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from pydantic_core import PydanticSerializationError
from pydantic_core import to_json as _fast_json

if TYPE_CHECKING:
    import pyarrow as pa

# Bounds of the promoted numeric columns (design.md §3 "Numbers out of range"). A value beyond them
# is not a real measurement (no model call uses a billion tokens or costs a million dollars), and
# letting it through would make sums overflow BIGINT / DECIMAL(38, 12) and fail whole loads: such a
# value is stored as NULL in its column (the raw value stays in the attributes JSON) and counted.
# With every span's count at most MAX_COUNT, a sum over 9 billion spans still fits a BIGINT.
MAX_COUNT = 10**9  # token counts, steps, step indexes of one span
MAX_COST_USD = 1_000_000.0  # cost of one span, USD

# Kinds of out-of-range value (the `kind` label of steplens_values_out_of_range).
OUT_OF_RANGE_COUNT = "count"
OUT_OF_RANGE_COST = "cost_usd"
_SCALARS = frozenset({"string_value", "bool_value", "int_value", "double_value"})

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def any_value(value: AnyValue) -> Any:
    """The Python value of an AnyValue: scalars as is, arrays as lists, kvlists as dicts, bytes as
    base64 text (JSON has no bytes), unset as None."""
    which = value.WhichOneof("value")
    if which in _SCALARS:
        return getattr(value, which)
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return None


def attributes(kvs: Iterable[KeyValue]) -> dict[str, Any]:
    """Key/values as a dict (a repeated key keeps its last value, as OTel SDKs do)."""
    out: dict[str, Any] = {}
    scalars = _SCALARS
    for kv in kvs:
        value = kv.value
        which = value.WhichOneof("value")
        out[kv.key] = getattr(value, which) if which in scalars else any_value(value)
    return out


def to_json(obj: Any) -> str:
    """Compact JSON; non-finite doubles (valid in OTLP, not in JSON) become the strings
    "NaN"/"Infinity"/"-Infinity" rather than failing the whole span.

    Why pydantic-core's serializer (already installed with pydantic): this runs for every span's
    attributes and events on the ingest path and is ~3x faster than the stdlib encoder; the stdlib
    path remains for anything it refuses.
    """
    try:
        return _fast_json(obj, inf_nan_mode="strings").decode()
    except (PydanticSerializationError, ValueError, TypeError):
        pass
    try:
        return _encode(obj)
    except ValueError:
        return _encode(_finite(obj))


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return "NaN" if math.isnan(obj) else ("Infinity" if obj > 0 else "-Infinity")
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def as_str(value: Any) -> str | None:
    """Text of a scalar; None for missing, empty, or structured values."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return str(value)
    return None


# ---------------------------------------------------------------------------------------------
# Out-of-range values: nulled, and tallied per normalized table
# ---------------------------------------------------------------------------------------------

_tally = threading.local()


@contextmanager
def out_of_range_tally() -> Iterator[Counter[str]]:
    """Count, by kind, the values nulled for being out of range while the block runs (this thread).

    Why thread-local: normalization runs in worker processes and in several store threads at once;
    each table reports its own count (ingest/normalize/table.py puts it in the table's metadata).
    """
    counts: Counter[str] = Counter()
    outer = getattr(_tally, "counts", None)
    _tally.counts = counts
    try:
        yield counts
    finally:
        _tally.counts = outer


def note_out_of_range(kind: str) -> None:
    """Record that one value of `kind` was nulled (a no-op outside `out_of_range_tally`)."""
    counts = getattr(_tally, "counts", None)
    if counts is not None:
        counts[kind] += 1


# Schema metadata key of a normalized table: JSON {kind: count} of the values nulled as out of range.
# Metadata travels with the table from a normalize worker process to the store, which counts it.
OUT_OF_RANGE_METADATA = b"steplens.out_of_range"


def with_out_of_range(table: pa.Table, nulled: Counter[str]) -> pa.Table:
    """`table` carrying the out-of-range tally in its metadata (unchanged when nothing was nulled)."""
    if not nulled:
        return table
    return table.replace_schema_metadata({OUT_OF_RANGE_METADATA: json.dumps(dict(nulled)).encode()})


def out_of_range_counts(table: pa.Table) -> dict[str, int]:
    """Values nulled as out of range while `table` was normalized, by kind (empty: none)."""
    raw = (table.schema.metadata or {}).get(OUT_OF_RANGE_METADATA)
    return json.loads(raw) if raw else {}


def _integer(value: Any) -> int | None:
    """An integer from int, integral float or (signed) digit string; the float's infinities and
    1e300 count as (huge) integers so that the caller's bound check nulls and tallies them."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return 2**64 if value > 0 else -(2**64)
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        text = value.strip()
        digits = text[1:] if text[:1] in "+-" else text
        if not digits.isascii() or not digits.isdigit():
            return None
        if len(digits) > 30:  # no need to parse 4000 digits to know the value is out of range
            return -(2**64) if text[:1] == "-" else 2**64
        return int(text)
    return None


def bounded_integer(value: Any, low: int = -MAX_COUNT, high: int = MAX_COUNT) -> int | None:
    """An integer within [low, high]; a number outside is nulled and tallied, a non-number is None."""
    n = _integer(value)
    if n is None:
        return None
    if low <= n <= high:
        return n
    note_out_of_range(OUT_OF_RANGE_COUNT)
    return None


def as_count(value: Any) -> int | None:
    """A non-negative integer count (tokens, steps) from int, integral float or digit string, at
    most MAX_COUNT (a larger one is nulled and tallied; a negative one is not a count)."""
    n = _integer(value)
    if n is None or n < 0:
        return None
    if n <= MAX_COUNT:
        return n
    note_out_of_range(OUT_OF_RANGE_COUNT)
    return None


def as_int32(value: Any) -> int | None:
    """An INTEGER column value (a count, so at most MAX_COUNT, which is within INTEGER's range)."""
    return as_count(value)


def as_cost(value: Any) -> float | None:
    """A cost in USD within [0, MAX_COST_USD]; a number outside (negative, 1e300, inf, nan) is
    nulled and tallied, so no sum of costs can overflow DECIMAL(38, 12)."""
    f = _number(value)
    if f is None:
        return None
    if 0.0 <= f <= MAX_COST_USD:  # False for nan too
        return f
    note_out_of_range(OUT_OF_RANGE_COST)
    return None


def _number(value: Any) -> float | None:
    """A float (possibly inf/nan) from int/float/numeric string; None for anything else."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        return float(value) if abs(value) < 2**1000 else math.copysign(math.inf, value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def as_float(value: Any) -> float | None:
    """A finite number from int/float/numeric string."""
    f = _number(value)
    return f if f is not None and math.isfinite(f) else None


def as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "1"):
            return True
        if text in ("false", "0"):
            return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    return None
