"""An OTLP export request → an Arrow table with exactly the `spans` table's columns.

Why Arrow: the store loads a whole batch with one `INSERT ... SELECT` from the Arrow table
(zero-copy into DuckDB), which is far cheaper than row inserts. Rows are built as tuples and
transposed once per request; resource and scope facts are computed once per group, not per span.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ingest.normalize.columns import SPANS_SCHEMA
from ingest.normalize.span import ENVIRONMENT_KEYS, ROW_COLUMNS, first_str, span_row
from ingest.normalize.values import as_str, attributes, to_json
from tracer import conventions as c
from tracer.pricing import PriceTable, default_table

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FIELDS = [SPANS_SCHEMA.field(name) for name in ROW_COLUMNS]
# DDL columns the normalizer does not produce (added by a later migration) are filled with NULL.
_EXTRA_FIELDS = [f for f in SPANS_SCHEMA if f.name not in ROW_COLUMNS]
_SCHEMA = pa.schema(_FIELDS + _EXTRA_FIELDS)
_ORDER = [_SCHEMA.get_field_index(f.name) for f in SPANS_SCHEMA]


def _micros(moment: datetime) -> int:
    """Microseconds since the epoch, UTC; a naive datetime is taken as UTC already."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _resource_facts(resource: Resource) -> tuple[str | None, str | None, str]:
    attrs = attributes(resource.attributes)
    return as_str(attrs.get(c.SERVICE_NAME)), first_str(attrs, ENVIRONMENT_KEYS), to_json(attrs)


def _prices(prices: PriceTable | None) -> PriceTable:
    return default_table() if prices is None else prices


def spans_table(
    project: str,
    request: ExportTraceServiceRequest,
    ingested_at: datetime,
    prices: PriceTable | None = None,
) -> pa.Table:
    """All spans of `request` as rows of the `spans` table (columns and order of SPANS_DDL).

    `prices` defaults to the bundled price table. Span ids are expected to be validated already
    (ingest/otlp/validate.py); anything else odd in a span is normalized, never raised.
    """
    table_prices = _prices(prices)
    ingested_us = _micros(ingested_at)
    rows: list[tuple] = []
    append = rows.append
    for resource_spans in request.resource_spans:
        service, environment, resource_json = _resource_facts(resource_spans.resource)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name or None
            for span in scope_spans.spans:
                append(
                    span_row(
                        span, project, service, scope, environment, resource_json, ingested_us, table_prices
                    )
                )
    return rows_to_table(rows)


def rows_to_table(rows: list[tuple]) -> pa.Table:
    """Transpose span rows into the Arrow table (in DDL column order)."""
    n = len(rows)
    columns: list[Any] = list(zip(*rows, strict=True)) if rows else [()] * len(_FIELDS)
    # A column with no value in the whole request (most promoted columns of most batches) is made
    # as nulls directly, ~6x cheaper than pa.array converting the Nones one by one. `any` stops at
    # the first truthy value, so dense columns cost next to nothing; only all-falsy columns (None,
    # 0, False, "") are counted, since 0 and False are values.
    arrays = [
        pa.nulls(n, type=field.type)
        if n and not any(col) and col.count(None) == n
        else pa.array(col, type=field.type)
        for col, field in zip(columns, _FIELDS, strict=True)
    ]
    arrays += [pa.nulls(n, type=field.type) for field in _EXTRA_FIELDS]
    table = pa.Table.from_arrays(arrays, schema=_SCHEMA)
    return table.select(_ORDER) if _EXTRA_FIELDS else table


def normalize_span(
    project: str,
    span: Span,
    resource: Resource | None = None,
    scope: InstrumentationScope | None = None,
    ingested_at: datetime | None = None,
    prices: PriceTable | None = None,
) -> dict[str, Any]:
    """One span's row as a dict (timestamps as UTC datetimes), for tests and debugging."""
    service, environment, resource_json = _resource_facts(resource or Resource())
    moment = ingested_at or datetime.now(UTC)
    row = span_row(
        span,
        project,
        service,
        (scope.name or None) if scope is not None else None,
        environment,
        resource_json,
        _micros(moment),
        _prices(prices),
    )
    return rows_to_table([row]).to_pylist()[0]
