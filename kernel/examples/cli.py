"""The body of `steplens demo`: check the server, run the workload with a progress bar, print a table.

Kept out of `steplens/cli.py` (which only dispatches) and out of `demo.py` (which returns data and
prints nothing but the optional progress bar), so tests can call either part alone.
"""

from __future__ import annotations

import os

import httpx
from rich.console import Console
from rich.table import Table

from kernel.examples.demo import TRACES_PATH, DemoSummary, run_demo

API_KEY_ENV = "STEPLENS_API_KEY"


def _base_url(endpoint: str) -> str:
    endpoint = endpoint.rstrip("/")
    return endpoint[: -len(TRACES_PATH)] if endpoint.endswith(TRACES_PATH) else endpoint


def server_problem(endpoint: str, timeout_s: float = 3.0) -> str | None:
    """Why the server at `endpoint` cannot take spans, or None when its health check answers.
    Asked before the run so a wrong URL costs a second, not a whole workload of failed exports."""
    url = _base_url(endpoint) + "/healthz"
    try:
        response = httpx.get(url, timeout=timeout_s)
    except httpx.HTTPError as exc:
        return f"no steplens server answers at {_base_url(endpoint)} ({type(exc).__name__}: {exc})"
    if response.status_code >= 400:
        return f"{url} answered {response.status_code}; is this a steplens ingest server?"
    return None


def summary_tables(summary: DemoSummary) -> list[Table]:
    """Totals per agent/version, then stop reasons per agent/version (two narrow tables fit a terminal)."""
    groups = [g for g in summary.groups.values() if g.runs]
    totals = Table(title=f"demo: {summary.runs} runs, seed {summary.seed}")
    for column in ("agent", "version", "runs", "ok", "mean steps", "input tok", "output tok", "cost $"):
        totals.add_column(column, justify="left" if column in ("agent", "version") else "right")
    for g in groups:
        totals.add_row(g.agent, g.version, str(g.runs), str(g.ok), f"{g.mean_steps:.2f}", f"{g.input_tokens:,}",
                       f"{g.output_tokens:,}", f"{g.cost_usd:.4f}")
    reasons = Table(title="stop reasons")
    reasons.add_column("stop reason")
    for g in groups:
        reasons.add_column(f"{g.agent} {g.version}", justify="right")
    for reason, _ in summary.stop_reasons.most_common():
        reasons.add_row(reason, *(str(g.stop_reasons.get(reason, 0)) for g in groups))
    return [totals, reasons]


def demo_command(endpoint: str, runs: int, seed: int = 0, concurrency: int = 64, console: Console | None = None) -> int:
    """Exit code: 0 when every run was exported and accepted, 1 when spans were lost, 2 when no
    server answers."""
    console = console or Console()
    problem = server_problem(endpoint)
    if problem is not None:
        console.print(f"[red]{problem}[/red]\nStart one with `steplens serve` or pass --endpoint.")
        return 2
    key = os.environ.get(API_KEY_ENV)
    summary = run_demo(endpoint, runs, seed=seed, concurrency=concurrency, progress=True,
                       headers={"x-api-key": key} if key else None)
    for table in summary_tables(summary):
        console.print(table)
    console.print(f"generated in {summary.seconds:.1f} s; spans: {summary.spans_exported:,} exported of "
                  f"{summary.spans_ended:,}")
    if not summary.export_complete:
        console.print(
            f"[red]not every span arrived: {summary.spans_failed} failed, {summary.spans_dropped} dropped"
            f"{'; last error: ' + summary.export_error if summary.export_error else ''}[/red]"
        )
        return 1
    return 0
