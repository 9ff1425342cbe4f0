"""Turn an OTLP/HTTP request body into an `ExportTraceServiceRequest`, never allocating beyond limits.

Why streaming decompression with `max_length`: a gzip bomb (1 GiB of zeros is ~1 MiB compressed)
must be refused after inflating at most `limit` bytes (+ one chunk), not after allocating 1 GiB.

Why hex ids need a pre-pass: OTLP/JSON encodes trace and span ids as hex, while protobuf's
canonical JSON mapping (json_format) expects base64 for `bytes`. Ids are converted before
json_format sees them; a span whose id is not hex is removed and reported as rejected, the rest
of the request still goes through.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.errors import Malformed, TooLarge, UnsupportedMediaType
from ingest.otlp.validate import Rejection, RejectReason

_CHUNK = 1024 * 1024  # most bytes inflated per zlib call: the overshoot past `limit` is at most this
_CHUNK_IN = 64 * 1024  # most compressed bytes given to zlib per call (see _inflate)


class BodyFormat(StrEnum):
    """The two OTLP/HTTP encodings; the value is the Content-Type answered with."""

    PROTOBUF = "application/x-protobuf"
    JSON = "application/json"


_MEDIA_TYPES = {
    "application/x-protobuf": BodyFormat.PROTOBUF,
    "application/protobuf": BodyFormat.PROTOBUF,
    "application/json": BodyFormat.JSON,
}


@dataclass
class DecodedRequest:
    """A decoded export request plus the spans removed while decoding (JSON ids that are not hex)."""

    request: ExportTraceServiceRequest
    rejections: list[Rejection] = field(default_factory=list)


def body_format(content_type: str | None) -> BodyFormat:
    """Map a Content-Type header (parameters such as charset ignored) to a body format, or raise 415."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    try:
        return _MEDIA_TYPES[media]
    except KeyError:
        shown = media or "(none)"
        raise UnsupportedMediaType(
            f"Content-Type {shown!r} not supported; send application/x-protobuf or application/json"
        ) from None


DEFAULT_MAX_GZIP_MEMBERS = 1000  # the default of the max_gzip_members setting


def decompress(
    body: bytes, content_encoding: str | None, limit: int, max_members: int = DEFAULT_MAX_GZIP_MEMBERS
) -> bytes:
    """Undo Content-Encoding (gzip, deflate, identity; a comma list is undone last-first).

    Raises TooLarge as soon as the output passes `limit` or a gzip layer has more than
    `max_members` members, Malformed for a broken stream and UnsupportedMediaType for an unknown
    coding.
    """
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    data = body
    for coding in reversed(codings):
        if coding == "identity":
            continue
        if coding in ("gzip", "x-gzip"):
            data = _inflate(data, 16 + zlib.MAX_WBITS, limit, "gzip", max_members)
        elif coding == "deflate":
            # RFC 9110 "deflate" is zlib-wrapped; some clients send raw deflate, so sniff the header.
            wbits = zlib.MAX_WBITS if _looks_like_zlib(data) else -zlib.MAX_WBITS
            data = _inflate(data, wbits, limit, "deflate", 1)
        else:
            raise UnsupportedMediaType(
                f"Content-Encoding {coding!r} not supported; use gzip, deflate or identity"
            )
    if len(data) > limit:
        raise TooLarge(f"body is over the {limit} byte limit")
    return data


def _looks_like_zlib(data: bytes) -> bool:
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0


def _inflate(data: bytes, wbits: int, limit: int, name: str, max_members: int) -> bytes:
    """Inflate `data` (several concatenated members for gzip) in time linear in its size.

    Why input slices of at most _CHUNK_IN: at the end of a member, zlib copies everything it was
    given past that end into `unused_data`. Feeding the whole body made that copy once per member,
    quadratic in the body for many small members (200,000 empty ones: 16-31 s of CPU). With slices,
    each member end copies at most one slice, and the member count is bounded too.
    """
    out = bytearray()
    view = memoryview(data)
    size = len(view)
    pos = 0  # input consumed up to here, once the current member has ended
    members = 0
    try:
        while True:  # one iteration per gzip member
            members += 1
            if members > max_members:
                raise TooLarge(
                    f"{name} body has more than {max_members} members (max_gzip_members); send one stream"
                )
            d = zlib.decompressobj(wbits)
            pending: bytes | memoryview = b""
            while not d.eof:
                if not pending:
                    if pos >= size:
                        raise Malformed(f"truncated {name} stream")
                    pending = view[pos : pos + _CHUNK_IN]
                    pos += len(pending)
                chunk = d.decompress(pending, _CHUNK)
                out += chunk
                if len(out) > limit:
                    raise TooLarge(f"body is over the {limit} byte limit after {name} decompression")
                pending = d.unconsumed_tail
            pos -= len(d.unused_data) + len(pending)  # what was fed past the member's end
            if pos >= size:
                return bytes(out)
            if view[pos] == 0 and not view[pos:].tobytes().strip(b"\x00"):  # trailing zero padding
                return bytes(out)
            if wbits != 16 + zlib.MAX_WBITS:
                raise Malformed(f"unexpected data after the end of the {name} stream")
    except zlib.error as exc:
        raise Malformed(f"invalid {name} stream: {exc}") from None


def parse_protobuf(data: bytes) -> ExportTraceServiceRequest:
    try:
        return ExportTraceServiceRequest.FromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise Malformed(f"body is not a valid ExportTraceServiceRequest protobuf: {exc}") from None


def parse_json(data: bytes) -> DecodedRequest:
    """Parse OTLP/JSON: hex ids, camelCase (snake_case accepted), int64 as strings or numbers,
    integer enums, unknown fields ignored."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise Malformed(f"body is not valid JSON: {_short(exc)}") from None
    if not isinstance(doc, dict):
        raise Malformed("OTLP/JSON body must be an object with a resourceSpans list")
    if _MAYBE_SURROGATE.search(data):
        _refuse_lone_surrogates(doc)
    rejections = _hex_ids_to_base64(doc)
    request = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(doc, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError, OverflowError, SystemError) as exc:
        # SystemError: upb's name lookups fail that way on text protobuf cannot hold
        raise Malformed(f"body is not a valid OTLP/JSON ExportTraceServiceRequest: {_short(exc)}") from None
    return DecodedRequest(request, rejections)


# A JSON \u escape of a UTF-16 surrogate, or a surrogate's raw (invalid UTF-8) bytes, which
# json.loads accepts: only bodies with one of these can hold a lone surrogate (emoji written as
# escaped pairs match too, and pass the exact check below).
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|\xed[\xa0-\xbf]")


def _refuse_lone_surrogates(doc: Any) -> None:
    """Raise Malformed naming where a string (or a key) holds a lone surrogate.

    Why refuse instead of letting protobuf parse: its name lookups (field names, enum names such
    as `kind` or `status.code`) fail with a SystemError on such text, which used to be a 500 that
    reset the keep-alive connection; and no protobuf string can hold one anyway.
    """
    try:
        where = _lone_surrogate_at(doc, "")
    except RecursionError:
        raise Malformed("OTLP/JSON body is nested too deeply") from None
    if where is not None:
        raise Malformed(
            f"OTLP/JSON text at {_short(where or 'the top level')} holds a lone UTF-16 surrogate (such as \\ud800 "
            "without its pair): JSON strings must be valid Unicode"
        )


def _lone_surrogate_at(obj: Any, path: str) -> str | None:
    if isinstance(obj, str):
        return None if _valid_unicode(obj) else path
    if isinstance(obj, dict):
        for key, value in obj.items():
            if not _valid_unicode(key):
                return f"{path} (a field name)" if path else "a top-level field name"
            found = _lone_surrogate_at(value, f"{path}.{key}" if path else key)
            if found is not None:
                return found
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            found = _lone_surrogate_at(value, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def decode_body(
    body: bytes,
    content_type: str | None,
    content_encoding: str | None,
    limit: int,
    max_members: int = DEFAULT_MAX_GZIP_MEMBERS,
) -> DecodedRequest:
    """The whole HTTP decode step: media type, decompression under `limit`, parse."""
    fmt = body_format(content_type)
    data = decompress(body, content_encoding, limit, max_members)
    if fmt is BodyFormat.PROTOBUF:
        return DecodedRequest(parse_protobuf(data))
    return parse_json(data)


def _short(exc: BaseException, n: int = 200) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= n else text[:n] + "..."


# ---------------------------------------------------------------------------------------------
# OTLP/JSON id pre-pass
# ---------------------------------------------------------------------------------------------

_SPAN_IDS = (
    (("traceId", "trace_id"), RejectReason.INVALID_TRACE_ID),
    (("spanId", "span_id"), RejectReason.INVALID_SPAN_ID),
    (("parentSpanId", "parent_span_id"), RejectReason.INVALID_PARENT_SPAN_ID),
)
_LINK_IDS = (("traceId", "trace_id"), ("spanId", "span_id"))
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")


def _items(obj: dict[str, Any], *names: str) -> list[Any]:
    for name in names:
        value = obj.get(name)
        if isinstance(value, list):
            return value
    return []


def _hex_ids_to_base64(doc: dict[str, Any]) -> list[Rejection]:
    """Rewrite hex ids to base64 in place; remove spans whose ids are not hex and report them.

    Wrong shapes (a list where an object belongs...) are left alone for json_format to report.
    """
    rejections: list[Rejection] = []
    for rs in _items(doc, "resourceSpans", "resource_spans"):
        if not isinstance(rs, dict):
            continue
        for ss in _items(rs, "scopeSpans", "scope_spans"):
            if not isinstance(ss, dict):
                continue
            spans = _items(ss, "spans")
            kept = []
            for span in spans:
                if not isinstance(span, dict):
                    kept.append(span)
                    continue
                problem = _convert_span_ids(span)
                if problem is None:
                    kept.append(span)
                else:
                    rejections.append(problem)
            spans[:] = kept
    return rejections


def _convert_span_ids(span: dict[str, Any]) -> Rejection | None:
    for names, reason in _SPAN_IDS:
        for name in names:
            if name in span and not _convert(span, name):
                return Rejection(reason, f"{name} is not a hex string")
    for link in _items(span, "links"):
        if not isinstance(link, dict):
            continue
        for names in _LINK_IDS:
            for name in names:
                if name in link and not _convert(link, name):
                    return Rejection(RejectReason.INVALID_LINK, f"link {name} is not a hex string")
    return None


def _convert(obj: dict[str, Any], key: str) -> bool:
    value = obj[key]
    if value is None:
        del obj[key]
        return True
    if not isinstance(value, str) or not _HEX.fullmatch(value):
        return False
    obj[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
    return True


__all__ = [
    "BodyFormat",
    "DecodedRequest",
    "body_format",
    "decode_body",
    "decompress",
    "parse_json",
    "parse_protobuf",
]
