"""`steplens migrate --from data/steplens.duckdb --to clickhouse://host:8123/db`: the copy with a
progress bar per table, one summary line per table, and exit codes.

Exit codes: 0 every table copied; 1 a table failed part way (what is in ClickHouse stays, and a
re-run resumes: nothing is inserted twice); 2 nothing could start (the file is missing or held by a
server, its spool holds records not loaded yet, the target URL is wrong or unreachable).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ingest.copy_store.copy import (
    DEFAULT_CHUNK_ROWS,
    ResumeFile,
    copy_table,
    not_copied,
    open_source,
    open_target,
    plan,
)
from ingest.copy_store.target import parse_target
from ingest.error_console import error_console
from ingest.errors import ConfigError
from ingest.store.failures import environmental

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


def unloaded_spool_records(conn: object, spool: Path) -> int:
    """Acknowledged records of the server's spool not loaded into the file yet (after a crash or a
    kill -9 the server loads them at its next start; a copy made before that would miss them)."""
    from ingest.store.loading import read_position
    from ingest.store.spool import list_segments, read_segment

    position = read_position(conn)  # type: ignore[arg-type]
    count = 0
    for seq in list_segments(spool):
        if seq < position.segment:
            continue
        count += sum(1 for _ in read_segment(spool, seq, position.offset if seq == position.segment else 0))
    return count


def migrate_command(source: Path, to: str, chunk_rows: int = DEFAULT_CHUNK_ROWS, config: Path | None = None,
                    console: Console | None = None) -> int:
    err = console or error_console()

    def fail(message: str) -> int:
        err.print(f"[bold red]steplens migrate:[/] {escape(message)}", highlight=False)
        return EXIT_ERROR

    from ingest.config import load_settings

    try:
        target = parse_target(to)
        settings = load_settings(config)
        conn = open_source(source)
    except (ConfigError, FileNotFoundError) as exc:
        return fail(str(exc))
    try:
        spool = source.with_name(source.name + ".spool")
        pending = unloaded_spool_records(conn, spool)
        if pending:
            return fail(
                f"{spool} holds {pending} acknowledged record(s) not loaded into {source} yet (the server did not "
                f"stop cleanly): run `steplens serve --db {source}` once and stop it with Ctrl-C (it loads them "
                "first), then migrate again"
            )
        try:
            transport = open_target(target, settings.clickhouse_cluster, settings.retention_days)
        except Exception as exc:  # noqa: BLE001 - any failure to reach or prepare the target is one line
            return fail(f"cannot use ClickHouse at {target.shown}: {type(exc).__name__}: {exc}")
        try:
            return _copy(conn, transport, source, target, chunk_rows, err)
        finally:
            transport.close()
    finally:
        conn.close()


def _copy(conn, transport, source: Path, target, chunk_rows: int, err: Console) -> int:  # type: ignore[no-untyped-def]
    plans = plan(conn)
    resume = ResumeFile(source, target)
    err.print(f"copying {source} into {escape(target.shown)}", highlight=False)
    columns = (TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(), TextColumn("rows"),
               TimeElapsedColumn(), TimeRemainingColumn())
    results, failed = [], None
    with Progress(*columns, console=err) as bars:
        tasks = {tp.table.name: bars.add_task(tp.table.name, total=tp.rows) for tp in plans}
        for tp in plans:
            task = tasks[tp.table.name]
            try:
                results.append(copy_table(conn, transport, target.database, tp, resume, chunk_rows,
                                          lambda n, task=task: bars.advance(task, n)))
            except Exception as exc:  # noqa: BLE001 - reported with what to do; what was copied stays
                failed = (tp.table.name, exc)
                break
    for r in results:
        again = f", {r.skipped_chunks} chunk(s) done by an earlier run" if r.skipped_chunks else ""
        err.print(f"  {r.name}: {r.source_rows:,} row(s) in DuckDB, {r.inserted:,} inserted now{again}",
                  highlight=False)
    skipped = not_copied(conn)
    if skipped:
        err.print(f"  not copied (no ClickHouse table; derived or DuckDB-only): {', '.join(skipped)}", highlight=False)
    if failed is not None:
        name, exc = failed
        hint = "ClickHouse is unreachable or refused" if environmental(exc) else "the copy failed"
        err.print(f"[bold red]steplens migrate:[/] {name}: {hint} ({escape(type(exc).__name__)}: {escape(str(exc))}); "
                  "run the same command again to resume (nothing is inserted twice)", highlight=False)
        return EXIT_FAILED
    err.print(f"[green]done:[/] {source} copied; point the nodes at it with --store clickhouse "
              f"--clickhouse-url {escape(target.url)}", highlight=False)
    return EXIT_OK
