"""`steplens eval backfill --rule R --since 7d`: score a rule's past runs, with a progress bar.

Why through the server's API (`POST /api/evaluators/{rule}/backfill`, then polling the job) and not
on the database file: the server is DuckDB's one writer, and its evaluator service is what makes an
evaluation idempotent (a run already scored online is skipped; one scored by the backfill is never
scored again online). The backfill runs in the server, so closing the terminal does not stop it.

Exit codes: 0 every run scored; 1 some evaluations ended in an error (listed on the evaluators
page); 2 the backfill could not run (server unreachable, unknown rule, key without admin scope).
"""

from __future__ import annotations

import os
import time

import httpx
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ingest.error_console import error_console

EXIT_OK, EXIT_ERRORS, EXIT_FAILED = 0, 1, 2
POLL_S = 0.5


def backfill_command(rule: str, since: str | None, api: str, console: Console | None = None,
                     timeout_s: float = 30.0) -> int:
    """Start the backfill, draw its progress until it finishes, return the exit code."""
    out = console or Console()
    err = error_console() if console is None else console
    key = os.environ.get("STEPLENS_API_KEY", "").strip()
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    base = api.rstrip("/")

    def fail(message: str) -> int:
        err.print(f"[bold red]steplens eval backfill:[/] {escape(message)}", highlight=False)
        return EXIT_FAILED

    try:
        with httpx.Client(base_url=base, headers=headers, timeout=timeout_s) as client:
            started = client.post(f"/api/evaluators/{rule}/backfill", json={"since": since})
            if started.status_code != 202:
                return fail(f"HTTP {started.status_code}: {_detail(started)}")
            job = started.json()
            with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TextColumn("{task.fields[errors]} error(s)"), TimeElapsedColumn(), console=out) as bar:
                task = bar.add_task(f"{rule}", total=job["total"], errors=0)
                while not job["finished"]:
                    time.sleep(POLL_S)
                    polled = client.get(f"/api/evaluators/backfill/{job['job_id']}")
                    if polled.status_code != 200:
                        return fail(f"HTTP {polled.status_code} while following the backfill: {_detail(polled)}")
                    job = polled.json()
                    bar.update(task, completed=job["done"], errors=job["errors"])
                bar.update(task, completed=job["done"], errors=job["errors"])
    except httpx.HTTPError as exc:
        return fail(f"cannot reach {base}: {type(exc).__name__} {exc}")
    if job.get("error"):
        return fail(f"the backfill stopped: {job['error']}")
    out.print(f"rule {escape(rule)}: {job['done']} run(s) evaluated, {job['errors']} error(s)", highlight=False)
    return EXIT_ERRORS if job["errors"] else EXIT_OK


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    detail = body.get("detail", body) if isinstance(body, dict) else body
    return str(detail)[:300]
