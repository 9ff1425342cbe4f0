"""The body of `steplens demo`: check the server, run the workload with a progress bar, print a table.

Kept out of `steplens/cli.py` (which only dispatches) and out of `demo.py` (which returns data and
prints nothing but the optional progress bar), so tests can call either part alone.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import httpx
from rich.console import Console
from rich.table import Table

from kernel.examples.demo import TRACES_PATH, DemoSummary, run_demo
from kernel.examples.demo_mcp import SERVER_NAME as MCP_SERVER
from kernel.examples.demo_memory import STORE_NAME as MEMORY_STORE
from kernel.examples.history import ROLLOUT_SHARE
from kernel.examples.ticket import TRANSFER_TOOL

API_KEY_ENV = "STEPLENS_API_KEY"


def base_url(endpoint: str) -> str:
    """The server's base URL of an endpoint given as either it or its OTLP traces URL."""
    endpoint = endpoint.rstrip("/")
    return endpoint[: -len(TRACES_PATH)] if endpoint.endswith(TRACES_PATH) else endpoint


_base_url = base_url


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


def _run_time(endpoint: str, order: str, headers: dict[str, str] | None) -> datetime | None:
    """Start time of the earliest (`asc`) or latest (`desc`) stored run of any mode (eval and shadow
    runs hold their place in the history too); None when the store has none."""
    response = httpx.get(_base_url(endpoint) + "/api/runs", headers=headers, timeout=30.0,
                         params={"limit": 1, "sort": "start_time", "order": order, "mode": "all"})
    runs = response.raise_for_status().json().get("runs") or []
    stamp = runs[0].get("start_time") if runs else None
    return None if not stamp else datetime.fromisoformat(stamp).astimezone(UTC)


def place_history(days: float, earliest: datetime | None, latest: datetime | None, now: datetime) -> datetime:
    """Where a new history of `days` days ends so that it overlaps no stored run: now when the
    store is empty or its latest run is older than the history's start; otherwise just before the
    earliest stored run (the stored runs stay the newest)."""
    if latest is None or earliest is None or latest <= now - timedelta(days=days):
        return _minute(now)
    return _minute(earliest - timedelta(minutes=1))


def _minute(t: datetime) -> datetime:
    """Whole minutes, so the printed end time is the exact one (a test can replan the same runs)."""
    return t.replace(second=0, microsecond=0)


def history_end(endpoint: str, days: float, headers: dict[str, str] | None) -> datetime:
    """`place_history` against the server's stored runs (the API answers what the key may read)."""
    now = datetime.now(UTC)
    return place_history(days, _run_time(endpoint, "asc", headers), _run_time(endpoint, "desc", headers), now)


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


def story_text(summary: DemoSummary) -> str:
    """The planted events with their dates, so a user knows what the dashboards should show."""
    story = summary.story
    assert story is not None
    fmt = "%a %Y-%m-%d %H:%M"
    partial, full = story.rollout
    outage, _ = story.outage
    modes = ", ".join(f"{n} {mode}" for mode, n in sorted(summary.modes.items()))
    return "\n".join([
        "planted in this history (UTC):",
        f"  ops v2 release: {ROLLOUT_SHARE:.0%} of ops traffic from {partial:{fmt}}, all of it from {full:{fmt}} "
        "(more steps and cost per run)",
        f"  ticket step-count creep: from {story.creep_start:{fmt}} to the end",
        f"  provider outage (llm_unavailable): {outage:{fmt}} for one hour",
        f"  query_logistics latency doubles from {story.latency_change:{fmt}}",
        f"  runs by mode: {modes}",
        f"  scores: {summary.scores_posted:,} (helpfulness and tone by a judge on every run, correct by a reviewer "
        "on a sample); ops v2 is judged less helpful and less often correct",
        f"  kernel features: ops reads the repository through the MCP server {MCP_SERVER} (stdio); ticket "
        f"remembers per user ({MEMORY_STORE}) and its model hands legal threats to a human ({TRANSFER_TOOL})",
        *([f"  annotation queue failed-runs: {summary.queue.added:,} failed runs to review, "
           f"{summary.queue.labelled} labels by two reviewers (the Queues page)"] if summary.queue else []),
    ])


def demo_command(endpoint: str, runs: int, seed: int = 0, concurrency: int = 64, console: Console | None = None,
                 days: float = 0) -> int:
    """Exit code: 0 when every run was exported and accepted, 1 when spans were lost, 2 when no
    server answers (or its runs could not be read for another reason than the key's scope, so the
    history could not be placed)."""
    console = console or Console()
    problem = server_problem(endpoint)
    if problem is not None:
        console.print(f"[red]{problem}[/red]\nStart one with `steplens serve` or pass --endpoint.")
        return 2
    key = os.environ.get(API_KEY_ENV)
    headers = {"x-api-key": key} if key else None
    end = None
    if days > 0:
        try:
            end = history_end(endpoint, days, headers)
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code not in (401, 403):
                console.print(f"[red]could not read the stored runs to place the history: {exc}[/red]")
                return 2
            # An ingest-only key may send but not read: the history ends now, as on an empty store.
            end = place_history(days, None, None, datetime.now(UTC))
            console.print(f"[yellow]the key may not read the stored runs ({exc.response.status_code}), so the "
                          "history ends now and may overlap runs already stored[/yellow]")
        except (httpx.HTTPError, ValueError) as exc:
            console.print(f"[red]could not read the stored runs to place the history: {exc}[/red]")
            return 2
        start = end - timedelta(days=days)
        console.print(f"history: {days:g} days of runs, {start:%Y-%m-%d %H:%M} .. {end:%Y-%m-%d %H:%M} UTC")
    summary = run_demo(endpoint, runs, seed=seed, concurrency=concurrency, progress=True, headers=headers,
                       days=days, end=end)
    for table in summary_tables(summary):
        console.print(table)
    if summary.story is not None:
        console.print(story_text(summary))
    console.print(f"generated in {summary.seconds:.1f} s; spans: {summary.spans_exported:,} exported of "
                  f"{summary.spans_ended:,}")
    if not summary.export_complete:
        console.print(
            f"[red]not every span arrived: {summary.spans_failed} failed, {summary.spans_dropped} dropped"
            f"{'; last error: ' + summary.export_error if summary.export_error else ''}[/red]"
        )
        return 1
    if summary.queue is not None and summary.queue.error:
        console.print(f"[yellow]the demo annotation queue was not filled: {summary.queue.error}[/yellow]")
    if summary.scores_error:
        console.print(f"[yellow]the runs' scores were not all stored ({summary.scores_posted:,} accepted): "
                      f"{summary.scores_error}[/yellow]")
    return 0
