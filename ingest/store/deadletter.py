"""The dead-letter directory, `<spool>/dead/`: acknowledged records the writer could not load.

Each record is three files named after its spool position (`<segment>-<offset>`): `.rec` holds the
record in spool framing (project + the request's protobuf bytes, CRC-checked, so `steplens spool
replay` can send exactly what the client sent), `.txt` the error in one line, `.json` what
`steplens spool list` shows (project, spans, stage, error, when). A record is set aside only for
an error of its own (ingest/store/failures.py); the files are written and fsynced before the
spool mark moves past it, so a dead letter is never lost between the spool and this directory.
A replayed record's files move to `dead/replayed/`, so replaying twice sends nothing twice.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ingest.store.spool import Position, RecordKind, decode_record, encode_record

DEAD_DIR = "dead"
REPLAYED_DIR = "replayed"


@dataclass(frozen=True)
class DeadLetter:
    """One dead record as `steplens spool list` shows it."""

    stem: str  # "<segment>-<offset>", the record's spool position
    kind: str  # "traces" or "logs"
    project: str
    spans: int | None
    error: str
    dead_at: str | None

    @property
    def reason(self) -> str:
        """The error's class name (the metrics label)."""
        return self.error.split(":", 1)[0].strip() or "unknown"


def dead_dir(spool_dir: Path) -> Path:
    return spool_dir / DEAD_DIR


def _write_durable(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write(
    spool_dir: Path, end: Position, project: str, payload: bytes, spans: int, error: BaseException,
    kind: RecordKind = RecordKind.TRACES,
) -> Path:
    """Set one record aside, durably (raises OSError when the disk refuses; the caller retries)."""
    directory = dead_dir(spool_dir)
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"{end.segment:012d}-{end.offset:012d}"
    text = f"{type(error).__name__}: {error}"
    meta = {
        "project": project, "kind": kind.name.lower(), "spans": spans, "error": text,
        "dead_at": datetime.now(UTC).isoformat(),
    }
    _write_durable(directory / f"{stem}.rec", encode_record(project, payload, kind))
    _write_durable(directory / f"{stem}.txt", (text + "\n").encode())
    _write_durable(directory / f"{stem}.json", json.dumps(meta).encode())
    _fsync_dir(directory)
    return directory / f"{stem}.rec"


def read_record(path: Path) -> tuple[RecordKind, str, bytes]:
    """(kind, project, request bytes) of a `.rec` file; ValueError when it does not check out."""
    try:
        return decode_record(path.read_bytes())
    except ValueError as exc:
        raise ValueError(f"{path.name}: {exc}") from exc


def list_dead(spool_dir: Path) -> list[DeadLetter]:
    """The dead records still waiting for a replay, oldest spool position first."""
    directory = dead_dir(spool_dir)
    if not directory.is_dir():
        return []
    out = []
    for rec in sorted(directory.glob("*.rec")):
        stem = rec.stem
        meta: dict[str, object] = {}
        with contextlib.suppress(OSError, ValueError):
            meta = json.loads((directory / f"{stem}.json").read_text())
        error = str(meta.get("error") or _read_text(directory / f"{stem}.txt") or "unknown")
        kind, project = _kind_and_project(rec)
        spans = meta.get("spans")
        out.append(
            DeadLetter(
                stem, kind, project, int(spans) if isinstance(spans, int) else None, error, _str(meta.get("dead_at"))
            )
        )
    return out


def mark_replayed(spool_dir: Path, stem: str) -> None:
    """Move a replayed record's files out of the way (kept, so nothing acknowledged is ever deleted)."""
    directory = dead_dir(spool_dir)
    done = directory / REPLAYED_DIR
    done.mkdir(exist_ok=True)
    for suffix in (".rec", ".txt", ".json"):
        path = directory / f"{stem}{suffix}"
        if path.exists():
            os.replace(path, done / path.name)
    _fsync_dir(directory)


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _kind_and_project(rec: Path) -> tuple[str, str]:
    try:
        kind, project, _ = read_record(rec)
    except (OSError, ValueError):
        return "?", "?"
    return kind.name.lower(), project


def _str(value: object) -> str | None:
    return None if value is None else str(value)
