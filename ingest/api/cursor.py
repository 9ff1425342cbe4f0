"""Opaque keyset cursors: URL-safe base64 of the last row's sort key, trace id and project.

The cursor also records the sort field and order it was made for, so a cursor replayed with a
different sort is refused (400) instead of silently returning an unrelated page.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from datetime import datetime

from ingest.queries.runs import RunKey


class BadCursor(ValueError):
    """The cursor is not one this API produced for this sort."""


def encode_cursor(key: RunKey, sort: str, order: str) -> str:
    value: object = key.value.isoformat() if isinstance(key.value, datetime) else key.value
    payload = {"s": sort, "o": order, "v": value, "t": key.trace_id, "p": key.project}
    raw = json.dumps(payload, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _in_range(value: int | float) -> bool:
    """A sort key a stored run can have: a finite number within BIGINT (a cursor is client input,
    and a 30-digit key used to reach DuckDB as a parameter it cannot bind: a 500)."""
    if isinstance(value, float):
        return math.isfinite(value) and abs(value) < 2.0**63
    return -(2**63) <= value < 2**63


def decode_cursor(cursor: str, sort: str, order: str) -> RunKey:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        payload = json.loads(raw)
        if not isinstance(payload, dict):
            raise ValueError("not an object")
        value, trace_id, project = payload["v"], payload["t"], payload["p"]
        if not isinstance(trace_id, str) or not isinstance(project, str):
            raise ValueError("bad ids")
    except (binascii.Error, ValueError, KeyError, TypeError) as exc:
        raise BadCursor("cursor is malformed: pass the `next` value of a previous page unchanged") from exc
    if payload.get("s") != sort or payload.get("o") != order:
        raise BadCursor(
            f"cursor was made for sort={payload.get('s')}&order={payload.get('o')}, "
            f"not sort={sort}&order={order}: restart paging without a cursor"
        )
    if sort == "start_time":
        if not isinstance(value, str):
            raise BadCursor("cursor is malformed: bad start_time key")
        try:
            value = datetime.fromisoformat(value)
        except ValueError as exc:
            raise BadCursor("cursor is malformed: bad start_time key") from exc
    elif isinstance(value, bool) or not isinstance(value, int | float) or not _in_range(value):
        raise BadCursor(f"cursor is malformed: bad {sort} key")
    return RunKey(value=value, trace_id=trace_id, project=project)
