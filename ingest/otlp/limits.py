"""Attribute limits applied at the door: what is stored of a span that is too big, and the marks
saying what was cut.

Why at the door and not in the normalizer: a span with one 60 MiB string or a million attributes
is acknowledged, then spooled, normalized and loaded as it is; DuckDB can run out of memory on it
after the 200 was sent. Cutting it before the ack means the spool, the normalizer and DuckDB only
ever see bounded spans, and the client is told (partial_success, rejected 0) what was cut.

What is cut (design.md §3 "Input limits"):
- a string or bytes value (of an attribute of a span, event, link, scope or resource; and the
  span's name, status message and event names) longer than `max_value_bytes` keeps its first
  `max_value_bytes` bytes (on a UTF-8 character boundary); an array or kvlist value keeps its
  leading elements that fit; an attribute whose key alone is over the limit is dropped;
- attributes beyond `max_attributes` of one owner are dropped (the first ones are kept), added to
  the owner's OTLP `dropped_attributes_count`, and counted on the span as
  `steplens.ingest.dropped_attributes`;
- events beyond `max_events` of one span are dropped (the first ones kept), and so are links,
  added to `dropped_events_count` / `dropped_links_count` and counted on the span as
  `steplens.ingest.dropped_events`;
- every cut value is listed in the owner's `steplens.ingest.truncated` attribute: a kvlist of
  where -> original size in bytes (where: the attribute key, `(name)`, `(status.message)`,
  `(events[i].name)`, `(events[i]) key`, `(links[i]) key`).

Why the gating by size: nearly every span is far below both limits, and walking attributes in
Python costs as much as normalizing them. A body no bigger than the value limit cannot hold an
oversized value, and a span whose serialized size is below the limit cannot either; attribute
counts are plain `len()` calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tracer import conventions as c

_NAME = "(name)"
_STATUS_MESSAGE = "(status.message)"


@dataclass(frozen=True)
class AttributeLimits:
    """The limits (settings `max_attribute_value_bytes`, `max_attributes_per_span`, `max_events_per_span`)."""

    max_value_bytes: int
    max_attributes: int
    max_events: int = 1024  # events, and separately links, per span


@dataclass
class LimitReport:
    """What enforcing the limits changed in one request."""

    spans: int = 0  # spans (or resources/scopes) that had something cut
    truncated: int = 0  # values truncated
    dropped: int = 0  # attributes dropped
    dropped_events: int = 0  # events and links dropped
    example: str = ""  # one cut, for the client's message

    def warning(self, limits: AttributeLimits) -> str | None:
        """The partial_success message (rejected 0: everything was stored, some of it cut)."""
        if not self.truncated and not self.dropped and not self.dropped_events:
            return None
        return (
            f"{self.spans} span(s) stored cut to the attribute limits ({self.truncated} value(s) truncated to "
            f"{limits.max_value_bytes} bytes, {self.dropped} attribute(s) over {limits.max_attributes} per "
            f"span dropped, {self.dropped_events} event(s)/link(s) over {limits.max_events} per span dropped; "
            f"marked in {c.INGEST_TRUNCATED} / {c.INGEST_DROPPED_ATTRIBUTES} / {c.INGEST_DROPPED_EVENTS}), "
            f"e.g. {self.example}"
        )


def enforce_limits(request: ExportTraceServiceRequest, body_bytes: int, limits: AttributeLimits) -> LimitReport:
    """Cut every span of `request` (in place) to `limits`; `body_bytes` is the decoded body's size."""
    report = LimitReport()
    check_values = body_bytes > limits.max_value_bytes
    check_counts = body_bytes > 2 * min(limits.max_attributes, limits.max_events)  # each takes >= 2 bytes
    if not check_values and not check_counts:
        return report
    max_bytes, n, max_events = limits.max_value_bytes, limits.max_attributes, limits.max_events
    for rs in request.resource_spans:
        _limit_owner(rs.resource, "resource", limits, report, check_values)
        for ss in rs.scope_spans:
            _limit_owner(ss.scope, "scope", limits, report, check_values)
            for span in ss.spans:  # the hot loop: cheapest checks first, no call per span
                big = check_values and span.ByteSize() > max_bytes
                if (
                    big
                    or len(span.attributes) > n
                    or len(span.events) > max_events
                    or len(span.links) > max_events
                    or (span.events and any(len(e.attributes) > n for e in span.events))
                    or (span.links and any(len(k.attributes) > n for k in span.links))
                ):
                    _limit_span(span, limits, report, big)
    return report


class _Cuts:
    """The cuts made to one owner (span, resource or scope), becoming its marks."""

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}
        self.dropped = 0
        self.dropped_events = 0

    def __bool__(self) -> bool:
        return bool(self.sizes) or self.dropped > 0 or self.dropped_events > 0


def _limit_owner(owner: Any, what: str, limits: AttributeLimits, report: LimitReport, check_values: bool) -> None:
    """A Resource or an InstrumentationScope: its attributes only."""
    attrs = owner.attributes
    if len(attrs) <= limits.max_attributes and not (check_values and owner.ByteSize() > limits.max_value_bytes):
        return
    cuts = _Cuts()
    owner.dropped_attributes_count += _limit_attributes(attrs, "", limits, cuts)
    _finish(attrs, cuts, what, report)


def _limit_span(span: Span, limits: AttributeLimits, report: LimitReport, check_values: bool) -> None:
    cuts = _Cuts()
    if len(span.events) > limits.max_events:  # the first ones are kept, as for attributes
        dropped = len(span.events) - limits.max_events
        del span.events[limits.max_events :]
        span.dropped_events_count += dropped
        cuts.dropped_events += dropped
    if len(span.links) > limits.max_events:
        dropped = len(span.links) - limits.max_events
        del span.links[limits.max_events :]
        span.dropped_links_count += dropped
        cuts.dropped_events += dropped
    span.dropped_attributes_count += _limit_attributes(span.attributes, "", limits, cuts)
    if check_values:
        span.name = _cut_text(span.name, _NAME, limits, cuts)
        span.status.message = _cut_text(span.status.message, _STATUS_MESSAGE, limits, cuts)
    for i, event in enumerate(span.events):
        if check_values:
            event.name = _cut_text(event.name, f"(events[{i}].name)", limits, cuts)
        event.dropped_attributes_count += _limit_attributes(event.attributes, f"(events[{i}]) ", limits, cuts)
    for i, link in enumerate(span.links):
        link.dropped_attributes_count += _limit_attributes(link.attributes, f"(links[{i}]) ", limits, cuts)
    _finish(span.attributes, cuts, f"span {span.name[:80]!r}", report)


def _finish(attrs: Any, cuts: _Cuts, what: str, report: LimitReport) -> None:
    """Append the owner's marks and account for its cuts in the report."""
    if not cuts:
        return
    if cuts.sizes:
        mark = AnyValue()
        for where, size in cuts.sizes.items():
            mark.kvlist_value.values.append(KeyValue(key=where, value=AnyValue(int_value=size)))
        attrs.append(KeyValue(key=c.INGEST_TRUNCATED, value=mark))
    if cuts.dropped:
        attrs.append(KeyValue(key=c.INGEST_DROPPED_ATTRIBUTES, value=AnyValue(int_value=cuts.dropped)))
    if cuts.dropped_events:
        attrs.append(KeyValue(key=c.INGEST_DROPPED_EVENTS, value=AnyValue(int_value=cuts.dropped_events)))
    report.spans += 1
    report.truncated += len(cuts.sizes)
    report.dropped += cuts.dropped
    report.dropped_events += cuts.dropped_events
    if not report.example:
        if cuts.sizes:
            where, size = next(iter(cuts.sizes.items()))
            report.example = f"{what}: {where[:80]!r} of {size} bytes"
        elif cuts.dropped:
            report.example = f"{what}: {cuts.dropped} attribute(s) dropped"
        else:
            report.example = f"{what}: {cuts.dropped_events} event(s)/link(s) dropped"


def _limit_attributes(attrs: Any, prefix: str, limits: AttributeLimits, cuts: _Cuts) -> int:
    """Cut one attribute list (a repeated KeyValue field) in place; returns how many were dropped."""
    kvs = attrs
    dropped = 0
    n = len(kvs)
    if n > limits.max_attributes:
        dropped = n - limits.max_attributes
        del kvs[limits.max_attributes :]
    limit = limits.max_value_bytes
    oversized_keys = []
    for i, kv in enumerate(kvs):
        if len(kv.key) > limit // 4 and len(kv.key.encode("utf-8", "surrogatepass")) > limit:
            oversized_keys.append(i)
            continue
        value = kv.value
        which = value.WhichOneof("value")
        if which == "string_value" or which == "bytes_value":
            raw = getattr(value, which)
            if len(raw) > (limit // 4 if which == "string_value" else limit):
                cut, size = _cut(raw, limit)
                if cut is not None:
                    setattr(value, which, cut)
                    cuts.sizes[prefix + kv.key] = size
        elif which in ("array_value", "kvlist_value"):
            size = value.ByteSize()
            if size > limit:
                _cut_structured(value, which, limit)
                cuts.sizes[prefix + kv.key] = size
    for i in reversed(oversized_keys):
        del kvs[i]
    dropped += len(oversized_keys)
    cuts.dropped += dropped
    return dropped


def _cut(raw: str | bytes, limit: int) -> tuple[str | bytes | None, int]:
    """(the first `limit` bytes of `raw`, its original size in bytes), or (None, size) if it fits."""
    if isinstance(raw, bytes):
        return (raw[:limit], len(raw)) if len(raw) > limit else (None, len(raw))
    data = raw.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return None, len(data)
    return data[:limit].decode("utf-8", "ignore"), len(data)


def _cut_text(text: str, where: str, limits: AttributeLimits, cuts: _Cuts) -> str:
    limit = limits.max_value_bytes
    if len(text) <= limit // 4:
        return text
    cut, size = _cut(text, limit)
    if cut is None:
        return text
    cuts.sizes[where] = size
    return str(cut)


def _cut_structured(value: AnyValue, which: str, limit: int) -> None:
    """Keep the leading elements of an array or kvlist whose serialized sizes fit in `limit`."""
    items = value.array_value.values if which == "array_value" else value.kvlist_value.values
    total = 0
    keep = 0
    for item in items:
        total += item.ByteSize() + 2
        if total > limit:
            break
        keep += 1
    del items[keep:]
