"""OTLP AnyValue → Python/JSON, and lenient coercions for promoted columns.

Why lenient: clients disagree on types (tokens as strings, booleans as "true", ints as doubles).
A promoted column takes what it can interpret and stays NULL otherwise; the raw value is always
kept in the attributes JSON, so nothing is lost and nothing crashes.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from pydantic_core import PydanticSerializationError
from pydantic_core import to_json as _fast_json

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
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


def as_count(value: Any) -> int | None:
    """A non-negative integer count (tokens, steps) from int, integral float or digit string."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value >= 0 and value.is_integer() else None
    if isinstance(value, str):
        text = value.strip()
        return int(text) if text.isdigit() and len(text) < 19 else None
    return None


def as_int32(value: Any) -> int | None:
    """An INTEGER column value; None when out of range rather than an overflow at insert."""
    n = as_count(value)
    return n if n is not None and _INT32_MIN <= n <= _INT32_MAX else None


def as_float(value: Any) -> float | None:
    """A finite number from int/float/numeric string."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        f = float(value)
    elif isinstance(value, str):
        try:
            f = float(value)
        except ValueError:
            return None
    else:
        return None
    return f if math.isfinite(f) else None


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
