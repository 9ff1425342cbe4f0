"""Stored spans back into OTLP/JSON export requests, so an export replays into any OTLP backend.

Why OTLP/JSON lines: it is what the OpenTelemetry Collector's `file` exporter writes and its
`otlpjsonfile` receiver reads, what `steplens import` reads, and each line is a valid body for any
`POST /v1/traces`. Ids are hex, as OTLP/JSON requires (not protobuf-JSON's base64).

What a stored span keeps, and so what comes back: ids, parent, name, kind, start and end (to the
microsecond: the store's precision), status and message, every attribute, events with their
attributes, the resource's attributes and the scope's name. What ingest does not store cannot be
exported: links, trace state, the scope's version and attributes, dropped counts. Attribute values
come back with their JSON type (string, bool, integer, double, array, map); bytes were stored as
base64 text and come back as that text.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

_EPOCH = datetime(1970, 1, 1)
_KINDS = {"UNSPECIFIED": 0, "INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}
_STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}
# The span columns the OTLP form is built from.
OTLP_COLUMNS = (
    "trace_id", "span_id", "parent_span_id", "name", "kind", "start_time", "end_time", "status",
    "status_message", "attributes", "events", "resource", "scope",
)  # fmt: skip


def unix_nano(ts: datetime) -> int:
    """Exact nanoseconds of a stored (naive UTC) or aware timestamp."""
    if ts.tzinfo is not None:
        ts = ts.astimezone(UTC).replace(tzinfo=None)
    return (ts - _EPOCH) // timedelta(microseconds=1) * 1000


def any_value(value: Any) -> dict[str, Any]:
    """A JSON value as an OTLP/JSON AnyValue (int64 as a string, as the OTLP/JSON mapping writes it)."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": key_values(value)}}
    return {"stringValue": str(value)}


def key_values(attributes: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [{"key": str(k), "value": any_value(v)} for k, v in (attributes or {}).items()]


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _event(event: dict[str, Any]) -> dict[str, Any]:
    time = event.get("time")
    out: dict[str, Any] = {"name": str(event.get("name") or ""), "attributes": key_values(event.get("attributes"))}
    if isinstance(time, str):
        with contextlib.suppress(ValueError):
            out["timeUnixNano"] = str(unix_nano(datetime.fromisoformat(time)))
    return out


def otlp_span(row: dict[str, Any]) -> dict[str, Any]:
    """One stored span row (OTLP_COLUMNS) as an OTLP/JSON span."""
    span: dict[str, Any] = {
        "traceId": row["trace_id"],
        "spanId": row["span_id"],
        "name": row["name"],
        "kind": _KINDS.get(str(row["kind"]).upper(), 0),
        "startTimeUnixNano": str(unix_nano(row["start_time"])),
        "endTimeUnixNano": str(unix_nano(row["end_time"])),
        "attributes": key_values(_json(row["attributes"])),
        "status": {"code": _STATUS.get(str(row["status"]).upper(), 0)},
    }
    if row.get("parent_span_id"):
        span["parentSpanId"] = row["parent_span_id"]
    if row.get("status_message"):
        span["status"]["message"] = row["status_message"]
    events = _json(row["events"])
    if isinstance(events, list) and events:
        span["events"] = [_event(e) for e in events if isinstance(e, dict)]
    return span


def export_request(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One `ExportTraceServiceRequest` (OTLP/JSON) of `rows`, grouped by resource and scope."""
    resources: dict[str, dict[str | None, list[dict[str, Any]]]] = {}
    for row in rows:
        resource = row["resource"] if isinstance(row["resource"], str) else json.dumps(row["resource"] or {})
        resources.setdefault(resource, {}).setdefault(row.get("scope"), []).append(otlp_span(row))
    out = []
    for resource, scopes in resources.items():
        scope_spans = []
        for scope, spans in scopes.items():
            entry: dict[str, Any] = {"spans": spans}
            if scope:
                entry["scope"] = {"name": scope}
            scope_spans.append(entry)
        out.append({"resource": {"attributes": key_values(_json(resource))}, "scopeSpans": scope_spans})
    return {"resourceSpans": out}
