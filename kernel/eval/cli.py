"""The bodies of `steplens eval run` and `steplens eval compare` (the script only dispatches).

With `--endpoint`, each case's verdict also becomes a score (`eval_passed`, source eval) on its
run (kernel/eval/scores.py), so the experiment's runs carry their results on the server.

Exit codes. run: 0 evaluated (whatever the success rate: a low score is a result, not an
error), 1 spans or scores were lost on the way to the server, 2 bad dataset/agent/server. compare: 0 no
regressions, 1 at least one case regressed (so CI can gate on it), 2 a run could not be loaded.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kernel.eval.compare import CaseChange, compare
from kernel.eval.dataset import DatasetError, load_dataset
from kernel.eval.results import DEFAULT_DIR, EvalRun, ResultsNotFound, load_run
from kernel.eval.runner import evaluate
from kernel.eval.scores import SCORE_NAME, post_case_scores
from kernel.examples.catalog import AGENTS
from kernel.examples.faults import FaultRates

API_KEY_ENV = "STEPLENS_API_KEY"
SERVICE_NAME = "steplens-eval"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def summary_table(run: EvalRun) -> Table:
    s = run.summary
    table = Table(title=f"eval {run.run_id}: {run.agent} {run.version}, {s.cases} cases, seed {run.seed}")
    for column in ("success", "mean steps", "timeout rate", "input tok", "output tok", "cost $"):
        table.add_column(column, justify="right")
    table.add_row(f"{s.passed}/{s.cases} ({_pct(s.success_rate)})", f"{s.mean_steps:.2f}", _pct(s.timeout_rate),
                  f"{s.input_tokens:,}", f"{s.output_tokens:,}", f"{s.cost_usd:.4f}")
    return table


def failures_table(run: EvalRun, limit: int = 30) -> Table | None:
    failed = [c for c in run.cases if not c.passed]
    if not failed:
        return None
    table = Table(title=f"failed cases ({len(failed)})")
    for column in ("case", "category", "stop reason", "steps", "why"):
        table.add_column(column, overflow="fold")
    for c in failed[:limit]:
        table.add_row(c.case_id, c.category, c.stop_reason, str(c.steps), "; ".join(c.failures))
    if len(failed) > limit:
        table.caption = f"... and {len(failed) - limit} more in the results file"
    return table


def _traced(endpoint: str, run: object) -> tuple[EvalRun, int, int, str | None]:
    """Run the coroutine factory `run` with tracing to `endpoint`; (result, exported, lost, error)."""
    import tracer
    from kernel.examples.demo import traces_url

    key = os.environ.get(API_KEY_ENV)
    handle = tracer.setup(service_name=SERVICE_NAME, endpoint=traces_url(endpoint),
                          headers={"x-api-key": key} if key else None)
    before = handle.stats()
    try:
        result = asyncio.run(run())  # type: ignore[operator]
    finally:
        flushed = handle.force_flush(60.0)
        handle.shutdown()
    after = handle.stats()
    lost = (after.failed - before.failed) + (after.dropped - before.dropped)
    error = after.last_error or (None if flushed else "flush did not finish within 60 s")
    return result, after.exported - before.exported, lost, error


def eval_run_command(
    dataset: Path,
    agent: str = "ticket",
    version: str = "v1",
    endpoint: str | None = None,
    seed: int = 0,
    out_dir: Path = DEFAULT_DIR,
    concurrency: int = 8,
    no_faults: bool = False,
    console: Console | None = None,
    scores: bool = True,
) -> int:
    console = console or Console()
    spec = AGENTS.get(agent)
    if spec is None:
        console.print(f"[red]unknown agent {agent!r}; known: {', '.join(AGENTS)}[/red]")
        return 2
    if version not in spec.versions:
        console.print(f"[red]agent {agent!r} has versions {', '.join(spec.versions)}, not {version!r}[/red]")
        return 2
    try:
        cases = load_dataset(dataset)
    except DatasetError as exc:
        console.print(f"[red]dataset not usable: {exc}[/red]")
        return 2
    if endpoint is not None:
        from kernel.examples.cli import server_problem

        problem = server_problem(endpoint)
        if problem is not None:
            console.print(f"[red]{problem}[/red]\nStart one with `steplens serve`, or leave out --endpoint.")
            return 2
    faults = FaultRates.none() if no_faults else None

    async def go() -> EvalRun:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(TextColumn("eval cases"), BarColumn(), MofNCompleteColumn(), console=console) as bar:
            task = bar.add_task("cases", total=len(cases))
            return await evaluate(dataset, cases, agent, version, seed=seed, faults=faults, concurrency=concurrency,
                                  on_case=lambda _: bar.advance(task))

    lost, error = 0, None
    if endpoint is None:
        run = asyncio.run(go())
    else:
        run, exported, lost, error = _traced(endpoint, go)
        run.endpoint, run.spans_exported, run.spans_lost = endpoint, exported, lost
        if scores:
            from kernel.examples.cli import base_url

            posted = post_case_scores(base_url(endpoint), run, os.environ.get(API_KEY_ENV))
            run.scores_posted, run.scores_error = posted.accepted, posted.error
    path = run.save(out_dir)
    console.print(summary_table(run))
    failed = failures_table(run)
    if failed is not None:
        console.print(failed)
    console.print(f"results: {path}")
    if endpoint is None:
        console.print("runs were not exported (no --endpoint); the results file has every case")
    elif lost:
        console.print(f"[red]{lost} span(s) did not reach {endpoint}{': ' + error if error else ''}[/red]")
        return 1
    else:
        console.print(f"runs exported to {endpoint}: filter the runs by eval run id {run.run_id}")
    if run.scores_error:
        console.print(f"[red]case verdicts not stored as scores ({run.scores_posted} accepted): {run.scores_error}[/red]")
        return 1
    if run.scores_posted is not None:
        console.print(f"{run.scores_posted} case verdicts stored as scores ({SCORE_NAME}, source eval) on their runs")
    return 0


def _change_table(title: str, changes: list[CaseChange], style: str) -> Table:
    table = Table(title=f"[{style}]{title} ({len(changes)})[/{style}]")
    for column in ("case", "category", "A", "B", "steps A→B", "cost A→B $", "why"):
        table.add_column(column, overflow="fold")
    for ch in changes:
        table.add_row(ch.case_id, ch.category, "pass" if ch.a.passed else "fail", "pass" if ch.b.passed else "fail",
                      f"{ch.a.steps}→{ch.b.steps}", f"{ch.a.cost_usd:.4f}→{ch.b.cost_usd:.4f}", ch.why)
    return table


def eval_compare_command(run_a: str, run_b: str, runs_dir: Path = DEFAULT_DIR, console: Console | None = None) -> int:
    console = console or Console()
    try:
        a, b = load_run(run_a, runs_dir), load_run(run_b, runs_dir)
    except (ResultsNotFound, ValueError) as exc:
        console.print(f"[red]{exc}[/red]")
        return 2
    cmp = compare(a, b)
    totals = Table(title=f"A = {a.run_id} ({a.agent} {a.version})   B = {b.run_id} ({b.agent} {b.version})")
    for column in ("", "A", "B", "change"):
        totals.add_column(column, justify="right")
    sa, sb = a.summary, b.summary
    rows = (
        ("success rate", _pct(sa.success_rate), _pct(sb.success_rate), f"{100 * (sb.success_rate - sa.success_rate):+.1f} pt"),
        ("mean steps", f"{sa.mean_steps:.2f}", f"{sb.mean_steps:.2f}", f"{sb.mean_steps - sa.mean_steps:+.2f}"),
        ("timeout rate", _pct(sa.timeout_rate), _pct(sb.timeout_rate), f"{100 * (sb.timeout_rate - sa.timeout_rate):+.1f} pt"),
        ("tokens", f"{sa.input_tokens + sa.output_tokens:,}", f"{sb.input_tokens + sb.output_tokens:,}",
         f"{(sb.input_tokens + sb.output_tokens) - (sa.input_tokens + sa.output_tokens):+,}"),
        ("cost $", f"{sa.cost_usd:.4f}", f"{sb.cost_usd:.4f}", f"{sb.cost_usd - sa.cost_usd:+.4f}"),
    )
    for row in rows:
        totals.add_row(*row)
    console.print(totals)
    if not cmp.same_dataset:
        console.print("[yellow]the two runs used different datasets: only cases in both are compared[/yellow]")
    for title, changes, style in (("regressions", cmp.regressions, "red"), ("improvements", cmp.improvements, "green"),
                                  ("same verdict, different step count", cmp.step_changes, "yellow")):
        if changes:
            console.print(_change_table(title, changes, style))
    if cmp.only_in_a or cmp.only_in_b:
        console.print(f"cases only in A: {len(cmp.only_in_a)}, only in B: {len(cmp.only_in_b)}")
    console.print(f"{len(cmp.regressions)} regression(s), {len(cmp.improvements)} improvement(s)")
    return 1 if cmp.regressions else 0
