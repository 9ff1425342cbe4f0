"""One import from start to end: files -> records -> batches -> server, with progress and a summary.

Errors are data: a bad record is reported as `file:line: reason` and the rest goes on; only what
makes every further request pointless (server unreachable, key refused, retries exhausted) stops
the import, and the summary says what is left undone and that re-running is safe (dedup).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

from ingest.importer.batch import Batch, Batcher, split_batch
from ingest.importer.models import MAX_KEPT, MIB, ImportOptions, ImportSummary, Problem
from ingest.importer.read import Record, find_inputs, read_file, span_count
from ingest.importer.send import Fatal, RetryableAnswer, Sender, answer_message, fatal_answer, reason

DEFAULT_API = "http://127.0.0.1:4318"


class _Run:
    """One import: feeds records into the batcher, sends batches, keeps the summary."""

    def __init__(self, sender: Sender, options: ImportOptions, summary: ImportSummary, say: Callable[[str], None]) -> None:
        self.sender = sender
        self.summary = summary
        self.say = say
        self.batcher = Batcher(options.max_batch_bytes, options.max_batch_spans)

    def record(self, record: Record) -> None:
        s = self.summary
        s.records += 1
        spans = span_count(record.request)
        s.spans_read += spans + len(record.dropped)
        if record.dropped:
            s.spans_rejected += len(record.dropped)
            for reason in record.dropped:
                self._keep(s.rejections, f"{record.where}: span not sent: {reason}")
            self.say(f"[yellow]{escape(record.where)}[/]: {len(record.dropped)} span(s) with unusable ids not sent "
                     f"({escape(record.dropped[0])})")
        if spans:
            for batch in self.batcher.add(record.request, (record.path, record.index)):
                self.send(batch)

    def problem(self, problem: Problem) -> None:
        self.summary.bad_records += 1
        self._keep(self.summary.problems, problem)
        self.say(f"[red]{escape(problem.where)}[/]: {escape(problem.reason)}")

    def finish(self) -> None:
        batch = self.batcher.flush()
        if batch is not None:
            self.send(batch)

    def send(self, batch: Batch) -> None:
        s = self.summary
        try:
            response = self.sender.post(batch.request)
        except (RetryableAnswer, httpx.HTTPError) as exc:
            s.spans_undelivered += batch.spans
            raise Fatal(f"gave up sending {batch.spans} span(s) from {batch.where} after retries: {reason(exc)}. "
                        "Re-run the same import once the server is back: spans already stored are not stored twice.") from None
        if response.status_code == 413 and batch.spans > 1:
            self.say(f"server says too large (HTTP 413) for {batch.spans} spans; sending in halves")
            for half in split_batch(batch):
                self.send(half)
            return
        if response.status_code == 200:
            s.requests += 1
            self._accepted(batch, response)
            return
        fatal = fatal_answer(response, self.sender.api)
        if fatal:
            s.spans_undelivered += batch.spans
            raise Fatal(fatal)
        s.spans_undelivered += batch.spans
        message = f"{batch.where}: HTTP {response.status_code}: {answer_message(response)} ({batch.spans} span(s) not stored)"
        self._keep(s.failures, message)
        self.say(f"[red]{escape(message)}[/]")

    def _accepted(self, batch: Batch, response: httpx.Response) -> None:
        s = self.summary
        try:
            answer = ExportTraceServiceResponse.FromString(response.content)
        except (DecodeError, ValueError):
            answer = ExportTraceServiceResponse()
            self._keep(s.failures, f"{batch.where}: unreadable 200 answer; spans counted as accepted")
        rejected = min(batch.spans, max(0, answer.partial_success.rejected_spans))
        s.spans_accepted += batch.spans - rejected
        if rejected or answer.partial_success.error_message:
            s.spans_rejected += rejected
            message = f"{batch.where}: {answer.partial_success.error_message or f'{rejected} span(s) rejected'}"
            self._keep(s.rejections, message)
            if rejected:
                self.say(f"[yellow]server rejected {rejected} span(s)[/]: {escape(message)}")
            else:  # an OTLP warning: everything stored, something changed (cut to limits, repaired)
                self.say(f"[yellow]server stored every span, with a warning[/]: {escape(message)}")

    @staticmethod
    def _keep(items: list[Any], item: Any) -> None:
        if len(items) < MAX_KEPT:
            items.append(item)


def import_paths(
    paths: Sequence[Path],
    api: str = DEFAULT_API,
    *,
    api_key: str | None = None,
    options: ImportOptions | None = None,
    console: Console | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> ImportSummary:
    """Import every trace file in `paths` into the server at `api`; never raises for bad input or an
    unreachable server (see `ImportSummary.fatal`). Progress and per-record problems go to `console`."""
    options = options or ImportOptions()
    err = console or Console(stderr=True)
    summary = ImportSummary()
    files, problems = find_inputs(paths)
    summary.files = len(files)
    progress = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
        TextColumn("{task.fields[spans]} spans"), TimeElapsedColumn(),
        console=err, disable=not err.is_terminal, transient=False,
    )

    def say(message: str) -> None:
        progress.console.print(message, highlight=False, soft_wrap=True)

    def on_retry(message: str) -> None:
        say(f"[yellow]{escape(message)}[/]")

    with Sender(api, api_key, options, on_retry=on_retry, sleep=sleep) as sender:
        run = _Run(sender, options, summary, say)
        for problem in problems:
            run.problem(problem)
        if not files:
            summary.fatal = "nothing to import: no trace files in the given paths"
            return summary
        try:
            sender.check()
        except Fatal as exc:
            summary.fatal = str(exc)
            return summary
        with progress:
            task = progress.add_task("importing", total=sum(_size(f) for f in files) or None, spans=0)
            done = 0
            try:
                for path in files:
                    progress.update(task, description=escape(path.name))
                    for item in read_file(path, options, _Advance(progress, task, done)):
                        if isinstance(item, Record):
                            run.record(item)
                        else:
                            run.problem(item)
                        progress.update(task, spans=summary.spans_read)
                    done += _size(path)
                    progress.update(task, completed=done)
                run.finish()
            except Fatal as exc:
                summary.fatal = str(exc)
                summary.spans_undelivered += run.batcher.pending_spans
    return summary


class _Advance:
    """Progress callback: bytes consumed of the current file, on top of the files already done."""

    def __init__(self, progress: Progress, task: Any, done: int) -> None:
        self.progress, self.task, self.done = progress, task, done

    def __call__(self, position: int) -> None:
        self.progress.update(self.task, completed=self.done + position)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def print_summary(summary: ImportSummary, console: Console) -> None:
    """The end-of-import report: counts, then the server's rejection messages, failures and bad records."""
    s = summary
    console.print(
        f"imported {s.files} file(s): {s.records} record(s) read, {s.requests} request(s) sent, "
        f"{s.spans_read} span(s) read, {s.spans_accepted} accepted, {s.spans_rejected} rejected, "
        f"{s.spans_undelivered} not delivered, {s.bad_records} unreadable record(s)",
        highlight=False,
        soft_wrap=True,
    )
    sections: list[tuple[str, Sequence[Any], int]] = [
        ("rejected spans", s.rejections, len(s.rejections)),
        ("failed requests", s.failures, len(s.failures)),
        ("unreadable", s.problems, s.bad_records),
    ]
    for title, items, count in sections:
        if not items:
            continue
        console.print(f"[bold]{title}:[/]", highlight=False, soft_wrap=True)
        for item in items[:50]:
            console.print(f"  {escape(str(item))}", highlight=False, soft_wrap=True)
        if count > 50:
            console.print(f"  ... and {count - 50} more", highlight=False, soft_wrap=True)
    if s.fatal:
        console.print(f"[bold red]steplens import:[/] {escape(s.fatal)}", highlight=False, soft_wrap=True)
    elif s.ok:
        console.print("[green]all spans stored[/]", highlight=False, soft_wrap=True)


def import_command(
    paths: Sequence[Path],
    api: str = DEFAULT_API,
    *,
    batch_spans: int = ImportOptions.max_batch_spans,
    batch_mib: float = ImportOptions.max_batch_bytes / MIB,
    console: Console | None = None,
) -> int:
    """`steplens import`: the key comes from STEPLENS_API_KEY; returns the exit code (0, 1 or 2)."""
    out = console or Console()
    key = os.environ.get("STEPLENS_API_KEY", "").strip() or None
    options = ImportOptions(max_batch_bytes=max(1, int(batch_mib * MIB)), max_batch_spans=max(1, batch_spans))
    summary = import_paths(paths, api, api_key=key, options=options, console=console or Console(stderr=True))
    print_summary(summary, out)
    return summary.exit_code

