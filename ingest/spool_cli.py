"""`steplens spool list` and `steplens spool replay`: the dead-letter directory for operators.

Why replay writes into the store directly (with the server stopped) rather than over OTLP: a dead
record belongs to the project it was sent for, and over OTLP the project comes from the key, so a
replay with one key would move other projects' spans into its project. Replay opens the store the
way `steplens serve` does (same settings, same normalization, the same spool and load path with
its dedup), submits every dead record under its own project, waits until it is loaded, and stops.
It is idempotent: a replayed record's files move to `dead/replayed/`, and a span that is already
stored is deduplicated; a record that fails again is set aside again, with its new error, and the
command exits 1.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from rich.console import Console
from rich.markup import escape

from ingest.config import Settings, load_settings
from ingest.error_console import error_console
from ingest.store import deadletter
from ingest.store.spool import RecordKind

EXIT_OK = 0
EXIT_STILL_DEAD = 1
EXIT_CANNOT_RUN = 2


@dataclass
class ReplayReport:
    replayed: int = 0  # records submitted and loaded
    spans_stored: int = 0
    spans_deduplicated: int = 0
    still_dead: int = 0  # records that failed again (set aside again) or could not be read


def _settings(config: Path | None, db: Path | None) -> Settings:
    return load_settings(config, db=db, normalize_processes=0)


def list_command(config: Path | None = None, db: Path | None = None) -> int:
    out = Console()
    err = error_console()
    try:
        settings = _settings(config, db)
    except (FileNotFoundError, ValueError) as exc:
        err.print(f"[bold red]steplens spool list:[/] {escape(str(exc))}", highlight=False)
        return EXIT_CANNOT_RUN
    dead = deadletter.list_dead(settings.spool_path)
    if not dead:
        out.print(f"no dead records in {deadletter.dead_dir(settings.spool_path)}", highlight=False)
        return EXIT_OK
    # one line per record, never wrapped: greppable, and the error is shown whole
    for d in dead:
        spans = "?" if d.spans is None else str(d.spans)
        print(f"{d.stem}\t{d.kind}\tproject={d.project}\tspans={spans}\tset_aside={d.dead_at or '?'}\t{d.error}")
    out.print(
        f"{len(dead)} dead record(s) in {deadletter.dead_dir(settings.spool_path)}. Fix the cause above, stop the "
        "server, then run `steplens spool replay` with the same --config/--db.",
        highlight=False,
    )
    return EXIT_OK


def replay(settings: Settings, log: Console) -> ReplayReport:
    """Submit every dead record into a store opened on `settings`; raises when the store cannot open."""
    from ingest.store.backend import open_store

    dead = deadletter.list_dead(settings.spool_path)
    report = ReplayReport()
    if not dead:
        return report
    store = open_store(settings)  # the configured backend (duckdb or clickhouse)
    store.start()  # raises (database locked) while the server runs
    try:
        directory = deadletter.dead_dir(settings.spool_path)
        for d in dead:
            try:
                kind, project, payload = deadletter.read_record(directory / f"{d.stem}.rec")
                request: object = (
                    ExportLogsServiceRequest.FromString(payload) if kind is RecordKind.LOGS
                    else payload if kind is RecordKind.SCORES  # JSON scores: the store parses them again
                    else ExportTraceServiceRequest.FromString(payload)
                )
            except Exception as exc:  # noqa: BLE001 - reported per record; the files stay where they are
                log.print(f"{d.stem}: cannot be read ({type(exc).__name__}: {escape(str(exc))}); left in place")
                report.still_dead += 1
                continue
            before = store.stats()
            if isinstance(request, ExportLogsServiceRequest):
                store.submit_logs_blocking(project, request, timeout=60)
            elif isinstance(request, bytes):
                store.submit_score_payload_blocking(project, request, timeout=60)
            else:
                store.submit_blocking(project, request, timeout=60)
            if not store.wait_loaded(120):
                raise RuntimeError(f"record {d.stem} was not loaded within 120 s; see the log above")
            after = store.stats()
            # the original moves aside only once the copy is loaded (or dead-lettered anew): a crash in
            # between replays it again, and dedup stores its spans once
            deadletter.mark_replayed(settings.spool_path, d.stem)
            if after.records_dead_lettered > before.records_dead_lettered:
                report.still_dead += 1
                log.print(f"{d.stem} (project {escape(project)}): failed again and was set aside again")
                continue
            report.replayed += 1
            report.spans_stored += after.spans_stored - before.spans_stored
            report.spans_deduplicated += after.spans_deduplicated - before.spans_deduplicated
    finally:
        store.stop()
    return report


def replay_command(config: Path | None = None, db: Path | None = None) -> int:
    out = Console()
    err = error_console()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        settings = _settings(config, db)
    except (FileNotFoundError, ValueError) as exc:
        err.print(f"[bold red]steplens spool replay:[/] {escape(str(exc))}", highlight=False)
        return EXIT_CANNOT_RUN
    try:
        report = replay(settings, out)
    except Exception as exc:  # noqa: BLE001 - one clear line and what to do, never a traceback
        hint = ""
        if "lock" in str(exc).lower():
            hint = " The server is running on this database: stop it first (replay writes to the database directly)."
        err.print(
            f"[bold red]steplens spool replay:[/] cannot open the store at {settings.db}: "
            f"{escape(type(exc).__name__ + ': ' + str(exc))}.{hint}",
            highlight=False,
        )
        return EXIT_CANNOT_RUN
    if not (report.replayed or report.still_dead):
        out.print(f"no dead records in {deadletter.dead_dir(settings.spool_path)}: nothing to replay", highlight=False)
        return EXIT_OK
    out.print(
        f"replayed {report.replayed} record(s): {report.spans_stored} span(s) stored, "
        f"{report.spans_deduplicated} already stored (deduplicated); {report.still_dead} still dead",
        highlight=False,
    )
    if report.still_dead:
        out.print("see `steplens spool list` for why they failed again", highlight=False)
        return EXIT_STILL_DEAD
    return EXIT_OK
