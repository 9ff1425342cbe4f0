"""`steplens export`: download tables of a running server through `GET /api/export`, with a progress bar.

Why through the API: the server holds the DuckDB file, so the export reads what the server reads,
confined to the key's project. Each table is written to `<out>/<table><suffix>.part` and renamed
only once its transfer ended cleanly, so a broken download never leaves a file that looks whole.

Exit codes: 0 everything exported; 1 a table failed (the others are kept); 2 nothing could start
(bad arguments, server unreachable, key refused).
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from ingest.error_console import error_console
from ingest.export.formats import SUFFIXES, Format

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2
ROWS_HEADER = "x-steplens-export-rows"
ALL_TABLES = ("runs", "spans", "scores")
_SPAN_MARK = b'"spanId":'  # once per span in an OTLP/JSON line (parent ids are "parentSpanId")


def _rows_in(chunk: bytes, fmt: Format) -> int:
    """Rows a chunk completes, for the progress bar (Parquet's are only known at the end)."""
    if fmt is Format.JSONL:
        return chunk.count(b"\n")
    if fmt is Format.OTLP:
        return chunk.count(_SPAN_MARK)
    return 0


def export_command(
    api: str, out: Path, fmt: Format, since: str | None, until: str | None, tables: list[str],
    project: str | None = None, key: str | None = None, console: Console | None = None,
) -> int:
    """Export each of `tables` (OTLP: spans only) into `out`; print one line per table."""
    err = console or error_console()
    key = key if key is not None else os.environ.get("STEPLENS_API_KEY", "").strip()
    if fmt is Format.OTLP:
        tables = ["spans"]
    unknown = [t for t in tables if t not in ALL_TABLES]
    if unknown:
        err.print(f"[bold red]steplens export:[/] unknown table {escape(', '.join(unknown))}: use "
                  f"{', '.join(ALL_TABLES)}", highlight=False)
        return EXIT_ERROR
    out.mkdir(parents=True, exist_ok=True)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    params = {k: v for k, v in {"format": fmt.value, "since": since, "until": until, "project": project}.items() if v}
    failed = False
    done = 0
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:,.0f}/{task.total:,.0f} rows"),
               TimeElapsedColumn())
    with httpx.Client(base_url=api.rstrip("/"), headers=headers, timeout=httpx.Timeout(60.0, read=300.0)) as client, \
            Progress(*columns, console=err, transient=False) as progress:
        for table in tables:
            target = out / f"{table}{SUFFIXES[fmt]}"
            try:
                rows, size = _download(client, progress, table, fmt, params, target)
            except _Refused as exc:
                progress.stop()
                err.print(f"[bold red]steplens export:[/] {escape(str(exc))}", highlight=False)
                return EXIT_FAILED if done else EXIT_ERROR
            except httpx.HTTPError as exc:
                err.print(f"[red]{table}: transfer failed ({escape(type(exc).__name__)}: {escape(str(exc))}); "
                          "nothing written[/]", highlight=False)
                failed = True
                continue
            done += 1
            err.print(f"{table}: {rows:,} rows, {size:,} bytes -> {escape(str(target))}", highlight=False)
    return EXIT_FAILED if failed else EXIT_OK


class _Refused(Exception):
    """The server answered the export with an error (bad parameters, key refused)."""


def _download(
    client: httpx.Client, progress: Progress, table: str, fmt: Format, params: dict[str, str], target: Path
) -> tuple[int, int]:
    """Stream one table into `target` (via `.part`); (rows the server announced, bytes written)."""
    part = target.with_name(target.name + ".part")
    try:
        with client.stream("GET", "/api/export", params={**params, "table": table}) as response:
            if response.status_code != 200:
                detail = response.read().decode("utf-8", "replace")[:500]
                raise _Refused(f"{table}: HTTP {response.status_code}: {detail}")
            announced = int(response.headers.get(ROWS_HEADER, "0") or 0)
            task = progress.add_task(table, total=announced)
            size = 0
            with part.open("wb") as sink:
                for chunk in response.iter_bytes():
                    sink.write(chunk)
                    size += len(chunk)
                    progress.update(task, advance=_rows_in(chunk, fmt), description=f"{table} ({size:,} bytes)")
            progress.update(task, completed=announced, description=table)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    part.replace(target)
    return announced, size
