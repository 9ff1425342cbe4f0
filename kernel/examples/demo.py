"""`steplens demo`: a workload of the example agents, exported through the real OTLP path.

Two shapes:
- a history (`days` > 0, the default of `steplens demo`): the runs of the last `days` days with
  a daily and weekly traffic shape and planted events (a gradual v2 release, partly as a gray
  release sticky per user with v2 shadows, `kernel.examples.demo_release`; a step-count creep,
  a provider outage, a slower tool, eval and shadow runs), see `kernel.examples.history`. Each
  run really executes now; its spans are stamped at its planned start (`tracer.clock.shifted`);
  A history also gets its quality signals: a judge's and a reviewer's scores on its runs, with a
  planted drop on the ops v2 release (`kernel.examples.demo_scores`);
- a burst (`days` = 0): every run now. 50% ticket agent, 30% ops agent, 20% cost-comparison
  planner (plan-and-execute), versions v1/v2 half each, every v1 run started before the v2 runs
  (`release_order`); 3% of runs fall into a provider "incident" where most calls fail (retries,
  fallbacks, some `llm_unavailable`).

Every run is decided by `(seed, run index)` (and, for a history, its end time) alone: which agent
and version, the task, the model's faults. So the same `--seed` gives the same runs (same stop
reasons, tokens and costs) whatever the concurrency, and an end-to-end test can compare what the
API stores with the `DemoSummary` returned here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from kernel import telemetry
from kernel.examples import ticket
from kernel.examples.catalog import AGENTS, build_agent
from kernel.examples.demo_queue import QueueResult, post_demo_queue
from kernel.examples.demo_release import execute_released, route_rollout, shadow_plan
from kernel.examples.demo_scores import FinishedRun, post_demo_scores
from kernel.examples.faults import FaultRates
from kernel.examples.history import AGENT_WEIGHTS, PlannedRun, Story, plan_history
from kernel.examples.sessions import assign_sessions
from kernel.policy import Shadow
from kernel.types import RunResult
from tracer.clock import shifted

DEGRADED_RATE = 0.03
DEGRADED_FAULTS = {"outage": 0.7}
DEFAULT_CONCURRENCY = 64
SERVICE_NAME = "steplens-demo"
TRACES_PATH = "/v1/traces"
_QUEUE_SIZE = 65_536


@dataclass
class GroupSummary:
    """Totals of one (agent, version) as the kernel returned them."""

    agent: str
    version: str
    runs: int = 0
    ok: int = 0
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    stop_reasons: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)

    @property
    def mean_steps(self) -> float:
        return self.steps / self.runs if self.runs else 0.0

    def add(self, result: RunResult, faults: Counter[str]) -> None:
        self.runs += 1
        self.ok += int(result.ok)
        self.steps += len(result.steps)
        self.input_tokens += result.usage.input_tokens
        self.output_tokens += result.usage.output_tokens
        self.cost_usd += result.cost_usd
        self.stop_reasons[result.stop_reason.value] += 1
        self.faults.update(faults)


@dataclass
class DemoSummary:
    """What the demo ran (per agent/version) and what happened to its spans."""

    seed: int
    groups: dict[tuple[str, str], GroupSummary]
    seconds: float
    spans_ended: int = 0
    spans_exported: int = 0
    spans_failed: int = 0
    spans_dropped: int = 0
    export_error: str | None = None
    trace_ids: list[str] = field(default_factory=list)
    modes: Counter[str] = field(default_factory=Counter)
    story: Story | None = None  # the history's dates (None: a burst, every run now)
    finished: list[FinishedRun] = field(default_factory=list)  # what each run's scores depend on
    scores_posted: int = 0  # scores the server accepted (a history's judge and reviewer scores)
    scores_error: str | None = None
    queue: QueueResult | None = None  # the history's annotation queue (kernel.examples.demo_queue)

    @property
    def runs(self) -> int:
        return sum(g.runs for g in self.groups.values())

    @property
    def ok(self) -> int:
        return sum(g.ok for g in self.groups.values())

    @property
    def stop_reasons(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for g in self.groups.values():
            total.update(g.stop_reasons)
        return total

    @property
    def input_tokens(self) -> int:
        return sum(g.input_tokens for g in self.groups.values())

    @property
    def output_tokens(self) -> int:
        return sum(g.output_tokens for g in self.groups.values())

    @property
    def cost_usd(self) -> float:
        return sum(g.cost_usd for g in self.groups.values())

    @property
    def export_complete(self) -> bool:
        """True when every span that ended was accepted by the backend."""
        return self.spans_failed == 0 and self.spans_dropped == 0 and self.spans_exported == self.spans_ended


def plan_run(seed: int, index: int, faults: FaultRates | None = None) -> PlannedRun:
    rng = random.Random(f"demo:{seed}:{index}")
    agent = rng.choices(list(AGENT_WEIGHTS), weights=list(AGENT_WEIGHTS.values()))[0]
    version = rng.choice(sorted(AGENTS[agent].versions))
    task = AGENTS[agent].sample_task(rng)
    rates = faults or FaultRates()
    if rng.random() < DEGRADED_RATE:
        rates = rates.model_copy(update=DEGRADED_FAULTS)
    return PlannedRun(index, agent, version, task.text, rates, f"{seed}:{index}")


def release_order(runs: int, seed: int, faults: FaultRates | None = None) -> list[int]:
    """Run indices with every agent's v1 runs started before its v2 runs: v2 is "released" after
    v1, as in real life, so "the version first seen last" is v2 and a default release comparison
    (and a time-window one) finds the planted regression the right way round. The runs themselves
    are still decided by (seed, index) alone; only the order they start in changes."""
    def rank(index: int) -> tuple[int, int]:
        plan = plan_run(seed, index, faults)
        return sorted(AGENTS[plan.agent].versions).index(plan.version), index

    return sorted(range(runs), key=rank)


async def execute(plan: PlannedRun, latency_s: tuple[float, float] = (0.0, 0.0)) -> tuple[RunResult, Counter[str]]:
    """Run one planned run; returns the result and the faults its models injected.

    A run with a `start` executes now with the tracer's clock shifted to that moment (the whole
    run moves, its measured durations stay); `mode` eval labels it with its evaluation run id,
    shadow runs it under the `Shadow` policy (side effects recorded, not executed)."""
    built = build_agent(plan.agent, plan.version, seed=plan.seed, faults=plan.faults, latency_s=latency_s,
                        policy=Shadow() if plan.mode == "shadow" else None)
    with contextlib.ExitStack() as scope:
        if plan.start is not None:
            scope.enter_context(shifted(plan.start.timestamp() - time.time()))
        if plan.mode == "eval":
            scope.enter_context(telemetry.run_labels(eval_run_id=plan.eval_run_id, eval_case_id=f"case-{plan.index}"))
        token = ticket.CARRIER_LATENCY_S.set(plan.carrier_latency_s)
        try:
            result = await built.agent.run(plan.task, conversation_id=plan.conversation_id, user_id=plan.user_id)
        finally:
            ticket.CARRIER_LATENCY_S.reset(token)
    injected: Counter[str] = Counter()
    for model in built.models:
        injected.update(model.injected)
    return result, injected


def traces_url(endpoint: str) -> str:
    """Accept the server's base URL (http://host:4318) or the full OTLP traces URL."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith(TRACES_PATH) else endpoint + TRACES_PATH


async def run_workload(
    runs: int,
    seed: int = 0,
    concurrency: int = DEFAULT_CONCURRENCY,
    *,
    faults: FaultRates | None = None,
    latency_s: tuple[float, float] = (0.0, 0.0),
    on_run: object = None,
    days: float = 0,
    end: datetime | None = None,
) -> DemoSummary:
    """The workload without any tracing setup (the caller decides where spans go, if anywhere).
    `days` > 0 plans a history ending at `end` (default now; `faults` then does not apply: the
    history decides each run's faults); 0 runs a burst, every run now."""
    if runs < 0:
        raise ValueError("runs must be >= 0")
    started = time.monotonic()
    groups = {(a, v): GroupSummary(a, v) for a, spec in AGENTS.items() for v in sorted(spec.versions)}
    trace_ids: list[str] = []
    finished: list[FinishedRun] = []
    modes: Counter[str] = Counter()
    story: Story | None = None
    if days > 0:
        story, planned = plan_history(runs, days, seed, end)
        plans = iter(route_rollout(story, planned))  # ops v2's partial rollout as a gray release
    else:
        plans = iter(assign_sessions([plan_run(seed, index, faults) for index in release_order(runs, seed, faults)], seed))

    async def worker() -> None:
        for plan in plans:
            if plan.release is not None:
                result, injected, shadows = await execute_released(plan, latency_s)
            else:
                (result, injected), shadows = await execute(plan, latency_s), []
            done = [(plan, result, injected), *((shadow_plan(plan), s.result, Counter()) for s in shadows)]
            for ran, outcome, faults in done:
                groups[(ran.agent, ran.version)].add(outcome, faults)
                modes[ran.mode] += 1
                if outcome.trace_id:
                    trace_ids.append(outcome.trace_id)
                    finished.append(FinishedRun(ran.index, ran.agent, ran.version, ran.mode, ran.start, outcome.ok,
                                                outcome.trace_id))
                if callable(on_run):  # per run stored, mirrors included: the progress bar reaches `runs`
                    on_run()

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, runs or 1)))))
    return DemoSummary(seed=seed, groups=groups, seconds=time.monotonic() - started, trace_ids=trace_ids,
                       modes=modes, story=story, finished=finished)


def run_demo(
    endpoint: str,
    runs: int,
    seed: int = 0,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = True,
    *,
    faults: FaultRates | None = None,
    headers: dict[str, str] | None = None,
    flush_timeout_s: float = 60.0,
    days: float = 0,
    end: datetime | None = None,
    scores: bool = True,
) -> DemoSummary:
    """Run `runs` demo runs, export their traces to `endpoint` (OTLP/HTTP, batched), flush, and
    say what was run and whether every span arrived. Synchronous: call it from plain code (the CLI).
    `days`/`end`: a history of that many days ending at `end` (see `run_workload`); a history's
    runs also get their judge and reviewer scores (`scores`, kernel.examples.demo_scores).

    `headers` go with every export (e.g. `{"x-api-key": ...}` for a server with API keys); None
    means the standard `OTEL_EXPORTER_OTLP_HEADERS`."""
    import tracer

    url = traces_url(endpoint)
    existing = tracer.active_handle()
    if existing is not None and existing.config.endpoint != url:
        raise RuntimeError(
            f"tracing is already set up to export to {existing.config.endpoint!r}; the demo needs {url!r}. "
            "Shut that handle down first."
        )
    handle = existing or tracer.setup(
        service_name=SERVICE_NAME, endpoint=url, headers=headers, max_queue_size=_QUEUE_SIZE
    )
    before = handle.stats()
    try:
        with _quiet_retries():
            summary = asyncio.run(_with_progress(runs, seed, concurrency, progress, faults, days, end))
    finally:
        flushed = handle.force_flush(flush_timeout_s)
        if existing is None:
            handle.shutdown()
    after = handle.stats()
    summary.spans_ended = after.ended - before.ended
    summary.spans_exported = after.exported - before.exported
    summary.spans_failed = after.failed - before.failed
    summary.spans_dropped = after.dropped - before.dropped
    summary.export_error = after.last_error or (None if flushed else f"flush did not finish within {flush_timeout_s:g} s")
    if scores and summary.story is not None and summary.finished:
        from kernel.examples.cli import base_url

        posted = post_demo_scores(base_url(endpoint), summary.finished, seed, headers)
        summary.scores_posted, summary.scores_error = posted.accepted, posted.error
        if posted.error is None:  # the queue fills the score configs just declared
            summary.queue = post_demo_queue(base_url(endpoint), summary.finished, seed, headers)
    return summary


@contextlib.contextmanager
def _quiet_retries() -> Iterator[None]:
    """The planted provider outages make `ResilientLLM` warn on every fallback; during the demo
    those are expected (they are in the traces), and hundreds of log lines would bury the progress bar."""
    logger = logging.getLogger("kernel.llm.resilient")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


async def _with_progress(
    runs: int, seed: int, concurrency: int, progress: bool, faults: FaultRates | None, days: float,
    end: datetime | None,
) -> DemoSummary:
    if not progress:
        return await run_workload(runs, seed, concurrency, faults=faults, days=days, end=end)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("demo runs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()) as bar:
        task = bar.add_task("runs", total=runs)
        return await run_workload(runs, seed, concurrency, faults=faults, on_run=lambda: bar.advance(task),
                                  days=days, end=end)
