"""The write-ahead spool: append-only segment files of length-prefixed, CRC-checked records.

Why a spool in front of DuckDB: an OTLP 200 must mean "survives a crash", and one fsync of a
sequential file shared by many requests is far cheaper than one DuckDB commit per request. The
loader replays these records into DuckDB at its own pace and records how far it got.

Segment layout: an 8-byte magic, then records. A record is
`u32 kind_and_length | u32 crc32(those 4 bytes + body) | body`, body = `u16 project_length | project |
serialized export request`. The top 4 bits of the first word are the record's kind (`RecordKind`:
0 = an ExportTraceServiceRequest, 1 = an ExportLogsServiceRequest, 2 = a JSON batch of scores,
ingest/store/scores_load.py), the low 28 bits the body length.
Kind 0 is exactly the original trace-only format (whose bodies never reached 2^28 bytes), so spools
written before logs existed replay unchanged, and the kind is covered by the CRC like the length. A crash can leave a torn or zero-filled tail; the reader
stops at the first record that does not check out. The writer never appends to a segment that
existed before it opened (it starts a new one), and after a failed write/fsync it rotates too, so a
bad record is only ever the tail of its segment and nothing valid hides behind it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from ingest.errors import TooLarge

log = logging.getLogger(__name__)

MAGIC = b"SLSPOOL1"
_HEADER = struct.Struct("<II")  # body length, crc32
_PROJECT_LEN = struct.Struct("<H")
SEGMENT_SUFFIX = ".seg"
DEFAULT_SEGMENT_MAX_BYTES = 64 * 1024 * 1024
_KIND_SHIFT = 28
_LENGTH_MASK = (1 << _KIND_SHIFT) - 1  # a record body is at most 256 MiB


class RecordKind(IntEnum):
    """What a spool record's payload is; the loader dispatches on it."""

    TRACES = 0
    LOGS = 1
    SCORES = 2  # a JSON batch of resolved scores (ingest/store/scores_load.py)


class SpoolCorruption(ValueError):
    """A record body that passed its CRC but cannot be split into project and payload."""


@dataclass(frozen=True, order=True)
class Position:
    """A place in the spool: the byte offset just after the last record consumed in `segment`."""

    segment: int
    offset: int


@dataclass(frozen=True)
class SpoolRecord:
    project: str
    payload: bytes
    end: Position  # position just after this record
    kind: RecordKind = RecordKind.TRACES


def encode_record(project: str, payload: bytes, kind: RecordKind = RecordKind.TRACES) -> bytes:
    """One framed record, ready to append (a TRACES record is byte-identical to the original format)."""
    p = project.encode()
    if len(p) > 0xFFFF:
        raise ValueError("project name longer than 65535 bytes")
    body = _PROJECT_LEN.pack(len(p)) + p + payload
    if len(body) > _LENGTH_MASK:
        raise TooLarge(f"request of {len(body)} bytes is over the spool's {_LENGTH_MASK} byte record limit")
    length = struct.pack("<I", len(body) | int(kind) << _KIND_SHIFT)
    return length + struct.pack("<I", zlib.crc32(body, zlib.crc32(length))) + body


_KINDS = frozenset(k.value for k in RecordKind)


def decode_body(body: bytes) -> tuple[str, bytes]:
    if len(body) < _PROJECT_LEN.size:
        raise SpoolCorruption("record body shorter than its project length field")
    (n,) = _PROJECT_LEN.unpack_from(body)
    if _PROJECT_LEN.size + n > len(body):
        raise SpoolCorruption("project length runs past the record body")
    return body[2 : 2 + n].decode(), body[2 + n :]


def decode_record(data: bytes) -> tuple[RecordKind, str, bytes]:
    """(kind, project, payload) of one framed record at the start of `data` (a dead-letter `.rec`
    file, say); ValueError when it is short, corrupt or of an unknown kind."""
    if len(data) < _HEADER.size:
        raise ValueError("shorter than a record header")
    word, crc = _HEADER.unpack_from(data)
    length, kind_value = word & _LENGTH_MASK, word >> _KIND_SHIFT
    body = data[_HEADER.size : _HEADER.size + length]
    if len(body) != length or zlib.crc32(body, zlib.crc32(data[:4])) != crc:
        raise ValueError("record does not check out (truncated or corrupt)")
    if kind_value not in _KINDS:
        raise ValueError(f"record of unknown kind {kind_value}")
    project, payload = decode_body(body)
    return RecordKind(kind_value), project, payload


def segment_name(seq: int) -> str:
    return f"{seq:012d}{SEGMENT_SUFFIX}"


def list_segments(directory: Path) -> list[int]:
    """Sequence numbers of the segment files in `directory`, ascending."""
    if not directory.is_dir():
        return []
    out = []
    for entry in directory.iterdir():
        if entry.name.endswith(SEGMENT_SUFFIX) and entry.name[: -len(SEGMENT_SUFFIX)].isdigit():
            out.append(int(entry.name[: -len(SEGMENT_SUFFIX)]))
    return sorted(out)


def read_segment(directory: Path, seq: int, start: int = 0) -> Iterator[SpoolRecord]:
    """Valid records of one segment from byte `start` (0 means after the magic), in order.

    Stops silently-but-logged at a torn tail: a short header, a length past the end of the file,
    or a CRC mismatch. That tail was never acknowledged (its fsync did not complete).
    """
    path = directory / segment_name(seq)
    with open(path, "rb") as f:
        data = f.read()
    if data[: len(MAGIC)] != MAGIC:
        log.warning("spool segment %s has no valid magic; skipping it", path.name)
        return
    pos = max(start, len(MAGIC))
    while pos < len(data):
        if pos + _HEADER.size > len(data):
            log.warning("spool segment %s: torn header at offset %d ignored", path.name, pos)
            return
        word, crc = _HEADER.unpack_from(data, pos)
        length, kind_value = word & _LENGTH_MASK, word >> _KIND_SHIFT
        body_start = pos + _HEADER.size
        if length < _PROJECT_LEN.size or body_start + length > len(data):
            log.warning("spool segment %s: torn record at offset %d ignored", path.name, pos)
            return
        if kind_value not in _KINDS:  # written by a newer version: stop rather than misread it
            log.error("spool segment %s: record of unknown kind %d at offset %d; the rest of the segment is "
                      "left unread (a newer steplens wrote it)", path.name, kind_value, pos)
            return
        body = data[body_start : body_start + length]
        if zlib.crc32(body, zlib.crc32(data[pos : pos + 4])) != crc:
            log.warning("spool segment %s: CRC mismatch at offset %d, tail ignored", path.name, pos)
            return
        project, payload = decode_body(body)
        pos = body_start + length
        yield SpoolRecord(project, payload, Position(seq, pos), RecordKind(kind_value))


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SpoolWriter:
    """Appends groups of records to the current segment and makes them durable with one fsync.

    Used by one thread only (the committer); not thread-safe on purpose.
    """

    def __init__(self, directory: Path, first_seq: int, segment_max_bytes: int = DEFAULT_SEGMENT_MAX_BYTES):
        self.directory = directory
        self.segment_max_bytes = segment_max_bytes
        self._next_seq = first_seq
        self._file: object | None = None
        self._fd = -1
        self._seq = -1
        self._size = 0
        self.fsyncs = 0
        directory.mkdir(parents=True, exist_ok=True)

    @property
    def segment(self) -> int:
        return self._seq

    def _open_new(self) -> None:
        self.close()
        seq = self._next_seq
        self._next_seq += 1
        path = self.directory / segment_name(seq)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        try:
            os.write(fd, MAGIC)
            os.fsync(fd)
            _fsync_dir(self.directory)  # the new file's directory entry must survive a crash too
        except BaseException:
            os.close(fd)
            # a full disk refuses the magic: leave no empty segment behind (one per failed attempt
            # would pile up while the disk stays full)
            with contextlib.suppress(OSError):
                path.unlink()
            raise
        self._fd, self._seq, self._size = fd, seq, len(MAGIC)

    def append(self, records: list[bytes]) -> list[Position]:
        """Write `records` contiguously, fsync once, and return each record's end position.

        On any OSError the segment is abandoned (the next call opens a new one), so a partially
        written record is only ever a segment's tail.
        """
        if self._fd < 0 or self._size >= self.segment_max_bytes:
            self._open_new()
        blob = b"".join(records)
        try:
            view = memoryview(blob)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
            os.fdatasync(self._fd)
            self.fsyncs += 1
        except OSError:
            self.close()
            raise
        ends = []
        pos = self._size
        for r in records:
            pos += len(r)
            ends.append(Position(self._seq, pos))
        self._size = pos
        return ends

    def close(self) -> None:
        if self._fd >= 0:
            try:
                os.close(self._fd)
            finally:
                self._fd = -1


def delete_segments_before(directory: Path, seq: int) -> int:
    """Remove fully loaded segments (those numbered below `seq`); returns how many went."""
    n = 0
    for s in list_segments(directory):
        if s >= seq:
            break
        try:
            (directory / segment_name(s)).unlink()
            n += 1
        except FileNotFoundError:
            pass
    return n
