"""OTLP log records -> rows of the `log_records` table (columns and order of LOG_RECORDS_DDL).

Why log records get rows of their own instead of being merged into their span: a GenAI event may
arrive before its span, after it, or in another request; keyed by (project, trace_id, span_id),
the trace endpoint joins them to whatever spans exist when it is read, so the arrival order never
matters and no span row is ever rewritten.

Why a content key (`record_key`): log records carry no id of their own, yet a retried export must
be stored once. A retry carries the same resource, scope and record, so a digest of those three
identifies it; two records identical to the nanosecond are indistinguishable anyway.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from ingest.normalize.values import any_value, as_float, as_str, attributes, to_json
from tracer import conventions as c

_JSON = pa.string()
LOG_RECORDS_SCHEMA = pa.schema(
    [
        ("project", pa.string()),
        ("trace_id", pa.string()),
        ("trace_key", pa.int64()),
        ("span_id", pa.string()),
        ("time", pa.timestamp("us")),
        ("observed_time", pa.timestamp("us")),
        ("event_name", pa.string()),
        ("severity_number", pa.int32()),
        ("severity_text", pa.string()),
        ("body", _JSON),
        ("attributes", _JSON),
        ("resource", _JSON),
        ("service", pa.string()),
        ("scope", pa.string()),
        ("eval_name", pa.string()),
        ("eval_score_value", pa.float64()),
        ("eval_score_label", pa.string()),
        ("eval_explanation", pa.string()),
        ("record_key", pa.string()),
        ("ingested_at", pa.timestamp("us")),
    ]
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


_MAX_US = 253_402_300_799_999_999  # 9999-12-31: beyond it a time is nonsense (and DuckDB's range ends)


def _time_us(unix_nano: int) -> int | None:
    """Microseconds since the epoch; NULL when unset (0) or absurd."""
    us = unix_nano // 1000
    return us if 0 < us <= _MAX_US else None


def _hex_id(raw: bytes) -> str | None:
    """A trace/span id as lowercase hex; absent or all-zero ids (no trace context) are NULL."""
    return raw.hex() if raw and any(raw) else None


def event_name(record_event_name: str, attrs: dict[str, Any]) -> str | None:
    """The record's EventName field (OTLP 1.5+), else the older `event.name` attribute."""
    return record_event_name or as_str(attrs.get(c.EVENT_NAME))


def logs_table(project: str, request: ExportLogsServiceRequest, ingested_at: datetime) -> pa.Table:
    """Every log record of `request` as a row (ids validated already, see ingest/otlp/logs.py)."""
    ingested_us = _micros(ingested_at)
    columns: dict[str, list[Any]] = {f.name: [] for f in LOG_RECORDS_SCHEMA}
    for resource_logs in request.resource_logs:
        resource = resource_logs.resource
        resource_attrs = attributes(resource.attributes)
        resource_json = to_json(resource_attrs)
        service = as_str(resource_attrs.get(c.SERVICE_NAME))
        resource_bytes = resource.SerializeToString(deterministic=True)
        for scope_logs in resource_logs.scope_logs:
            scope_bytes = scope_logs.scope.SerializeToString(deterministic=True)
            scope = scope_logs.scope.name or None
            for record in scope_logs.log_records:
                attrs = attributes(record.attributes)
                name = event_name(record.event_name, attrs)
                evaluation = name == c.GEN_AI_EVENT_EVALUATION_RESULT
                digest = hashlib.blake2b(resource_bytes, digest_size=16)
                digest.update(scope_bytes)
                digest.update(record.SerializeToString(deterministic=True))
                observed = _time_us(record.observed_time_unix_nano)
                trace_hex = _hex_id(record.trace_id)
                row = {
                    "project": project,
                    "trace_id": trace_hex,
                    "trace_key": int(trace_hex[:15], 16) if trace_hex else None,
                    "span_id": _hex_id(record.span_id),
                    "time": _time_us(record.time_unix_nano) or observed or ingested_us,
                    "observed_time": observed,
                    "event_name": name,
                    "severity_number": record.severity_number or None,
                    "severity_text": record.severity_text or None,
                    "body": to_json(any_value(record.body)) if record.HasField("body") else None,
                    "attributes": to_json(attrs),
                    "resource": resource_json,
                    "service": service,
                    "scope": scope,
                    "eval_name": as_str(attrs.get(c.GEN_AI_EVALUATION_NAME)) if evaluation else None,
                    "eval_score_value": as_float(attrs.get(c.GEN_AI_EVALUATION_SCORE_VALUE)) if evaluation else None,
                    "eval_score_label": as_str(attrs.get(c.GEN_AI_EVALUATION_SCORE_LABEL)) if evaluation else None,
                    "eval_explanation": as_str(attrs.get(c.GEN_AI_EVALUATION_EXPLANATION)) if evaluation else None,
                    "record_key": digest.hexdigest(),
                    "ingested_at": ingested_us,
                }
                for key, value in row.items():
                    columns[key].append(value)
    return pa.Table.from_pydict(columns, schema=LOG_RECORDS_SCHEMA)


def count_log_records(request: ExportLogsServiceRequest) -> int:
    return sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs)
