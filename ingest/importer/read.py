"""Finding trace files and reading export requests out of them, streamed, by content not by name.

Formats: OTLP/JSON lines (Collector `file` exporter, one `ExportTraceServiceRequest` per line; a
pretty-printed single request too), one OTLP protobuf request body, the Collector's `format: proto`
(4-byte big-endian length before each message), each optionally gzipped. Why sniff the content:
a renamed or extension-less file still imports, and a directory can mix formats.

Why reuse `ingest.otlp.decode.parse_json`: OTLP/JSON ids are hex, not protobuf-JSON base64; the
receiver's decoder already gets that (and the bad-id cases) right, so the two can never disagree.
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.errors import Malformed
from ingest.importer.models import MIB, ImportOptions, Problem
from ingest.otlp.decode import parse_json

SUFFIXES = (".jsonl", ".json", ".bin", ".pb")  # each also with .gz
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def is_trace_file(path: Path) -> bool:
    name = path.name.lower().removesuffix(".gz")
    return name.endswith(SUFFIXES)


def find_inputs(paths: Iterable[Path]) -> tuple[list[Path], list[Problem]]:
    """Files named on the command line are taken whatever their name; directories are searched
    recursively for the known suffixes (sorted, so an import is repeatable)."""
    files: list[Path] = []
    problems: list[Problem] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and is_trace_file(p))
            if not found:
                problems.append(Problem(str(path), f"no trace files ({', '.join(SUFFIXES)}, optionally .gz) in it"))
            files.extend(found)
        elif path.is_file():
            files.append(path)
        elif path.exists():
            problems.append(Problem(str(path), "not a regular file or directory"))
        else:
            problems.append(Problem(str(path), "no such file or directory"))
    return files, problems


# ---------------------------------------------------------------------------------------------
# Reading records
# ---------------------------------------------------------------------------------------------


@dataclass
class Record:
    """One export request read from a file, where it came from, and spans dropped while decoding."""

    request: ExportTraceServiceRequest
    path: str
    index: int | None  # line number (JSON lines) or message number (framed protobuf); None: whole file
    dropped: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return self.path if self.index is None else f"{self.path}:{self.index}"


Item = Record | Problem


def read_file(path: Path, options: ImportOptions, position: Callable[[int], None] | None = None) -> Iterator[Item]:
    """Every record of `path` (or a Problem for each part that cannot be read), streamed.

    `position(n)` is called with the number of bytes of the file consumed so far (for progress).
    Never raises for bad content; an unreadable file is one Problem.
    """
    name = str(path)
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below; the generator owns it
    except OSError as exc:
        yield Problem(name, f"cannot open: {exc.strerror or exc}")
        return
    with raw:
        report = (lambda: position(raw.tell())) if position else (lambda: None)
        try:
            head = raw.peek(4)[:4]
            if head.startswith(_ZSTD_MAGIC):
                yield Problem(name, "zstd-compressed: decompress it first (zstd -d), then import the result")
                return
            stream: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if head.startswith(_GZIP_MAGIC) else raw
            yield from _read_stream(stream, name, options, report)
        except (OSError, EOFError, zlib.error) as exc:  # broken gzip stream, I/O error mid-file
            yield Problem(name, f"read failed: {type(exc).__name__}: {exc}")
        report()


def _read_stream(stream: IO[bytes], name: str, options: ImportOptions, report: Callable[[], None]) -> Iterator[Item]:
    buffered = stream if hasattr(stream, "peek") else io.BufferedReader(stream)  # type: ignore[arg-type]
    head = buffered.peek(64)[:64]  # type: ignore[attr-defined]
    first = head.lstrip()[:1]
    if not head:
        return  # an empty file holds no spans; nothing to report
    if first in (b"{", b"["):
        yield from _json_lines(buffered, name, options, report)
    elif head[:1] == b"\x00":
        yield from _framed_protobuf(buffered, name, options, report)
    else:
        yield _one_protobuf(buffered, name, options)


def _one_protobuf(stream: IO[bytes], name: str, options: ImportOptions) -> Item:
    data = stream.read(options.max_record_bytes + 1)
    if len(data) > options.max_record_bytes:
        return Problem(name, f"protobuf message over {options.max_record_bytes} bytes; split it or raise the limit")
    return _parse_protobuf(data, name, None)


def _parse_protobuf(data: bytes, name: str, index: int | None) -> Item:
    where = name if index is None else f"{name} (message {index})"
    if data.startswith(_ZSTD_MAGIC):
        return Problem(where, "zstd-compressed message (Collector file exporter with compression: zstd): not supported")
    try:
        return Record(ExportTraceServiceRequest.FromString(data), name, index)
    except (DecodeError, RecursionError, ValueError) as exc:
        return Problem(where, f"not a valid OTLP ExportTraceServiceRequest protobuf ({exc})")


def _framed_protobuf(stream: IO[bytes], name: str, options: ImportOptions, report: Callable[[], None]) -> Iterator[Item]:
    """The Collector file exporter's `format: proto`: [uint32 big-endian length][message]..."""
    index = 0
    while True:
        prefix = stream.read(4)
        if not prefix:
            return
        index += 1
        if len(prefix) < 4:
            yield Problem(f"{name} (message {index})", "file ends inside a length prefix (truncated file)")
            return
        (size,) = struct.unpack(">I", prefix)
        if size > options.max_record_bytes:
            yield Problem(f"{name} (message {index})", f"length prefix says {size} bytes, over the "
                          f"{options.max_record_bytes} byte limit (not a length-prefixed file, or corrupt)")
            return
        data = stream.read(size)
        if len(data) < size:
            yield Problem(f"{name} (message {index})", f"file ends after {len(data)} of {size} bytes (truncated file)")
            return
        yield _parse_protobuf(data, name, index)
        report()


def _json_lines(stream: IO[bytes], name: str, options: ImportOptions, report: Callable[[], None]) -> Iterator[Item]:
    limit = options.max_record_bytes
    lineno = 0
    first = True
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        lineno += 1
        if len(line) > limit and not line.endswith(b"\n"):
            while (rest := stream.readline(MIB)) and not rest.endswith(b"\n"):
                pass
            yield Problem(f"{name}:{lineno}", f"line longer than {limit} bytes; skipped")
            continue
        if not line.strip():
            continue
        item = _parse_json_line(line, name, lineno)
        if first and isinstance(item, Problem):
            whole = _whole_json_document(stream, name, limit)
            if whole is not None:
                yield whole
                return
        first = False
        yield item
        report()


def _whole_json_document(stream: IO[bytes], name: str, limit: int) -> Record | None:
    """A pretty-printed single request: only tried when the first line is not JSON by itself."""
    try:
        here = stream.tell()
        stream.seek(0)
        data = stream.read(limit + 1)
    except (OSError, ValueError):
        return None
    item = _parse_json_line(data, name, None) if len(data) <= limit else None
    if isinstance(item, Record):
        return item
    stream.seek(here)
    return None


def _parse_json_line(data: bytes, name: str, lineno: int | None) -> Item:
    where = name if lineno is None else f"{name}:{lineno}"
    try:
        decoded = parse_json(data)
    except Malformed as exc:
        return Problem(where, exc.message.removeprefix("body is "))
    if not decoded.request.resource_spans and b"resourceSpans" not in data and b"resource_spans" not in data:
        return Problem(where, "no resourceSpans: not an OTLP trace export (a metrics or logs record?)")
    dropped = [f"{r.reason.value}: {r.detail}" for r in decoded.rejections]
    return Record(decoded.request, name, lineno, dropped)


def span_count(request: ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)

