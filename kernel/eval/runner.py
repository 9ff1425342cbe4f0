"""Run a dataset through an example agent, each case a normal traced run tagged with eval ids.

Every case runs with its own seed derived from (seed, case id), so results do not depend on the
order or concurrency of cases and a rerun with the same seed is identical. The runs go through
`Agent.run` inside `telemetry.run_labels(eval_run_id=..., eval_case_id=...)`: the run span gets
`steplens.eval.run_id`, `steplens.eval.case_id` and mode `eval`, so the stored runs can be found
and compared in the query API like any other.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from kernel import telemetry
from kernel.eval.dataset import EvalCase
from kernel.eval.results import EvalRun, EvalSummary
from kernel.eval.scoring import CaseResult, score
from kernel.examples.catalog import build_agent
from kernel.examples.faults import FaultRates


def new_run_id(agent: str, version: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{agent}-{version}-{stamp}-{secrets.token_hex(3)}"


async def run_case(case: EvalCase, agent: str, version: str, run_id: str, seed: int,
                   faults: FaultRates | None = None) -> CaseResult:
    built = build_agent(agent, version, seed=f"eval:{seed}:{case.id}", faults=faults)
    with telemetry.run_labels(eval_run_id=run_id, eval_case_id=case.id):
        result = await built.agent.run(case.task)
    return score(case, result)


async def run_cases(
    cases: list[EvalCase],
    agent: str,
    version: str,
    *,
    run_id: str,
    seed: int = 0,
    faults: FaultRates | None = None,
    concurrency: int = 8,
    on_case: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Results in dataset order."""
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(case: EvalCase) -> CaseResult:
        async with gate:
            result = await run_case(case, agent, version, run_id, seed, faults)
        if on_case is not None:
            on_case(result)
        return result

    return list(await asyncio.gather(*(one(c) for c in cases)))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def evaluate(
    dataset: Path,
    cases: list[EvalCase],
    agent: str,
    version: str,
    *,
    seed: int = 0,
    run_id: str | None = None,
    faults: FaultRates | None = None,
    concurrency: int = 8,
    on_case: Callable[[CaseResult], None] | None = None,
) -> EvalRun:
    """The whole evaluation (no tracing setup: the caller decides where spans go)."""
    run_id = run_id or new_run_id(agent, version)
    started_at, t0 = datetime.now(UTC), time.monotonic()
    results = await run_cases(cases, agent, version, run_id=run_id, seed=seed, faults=faults,
                              concurrency=concurrency, on_case=on_case)
    return EvalRun(
        run_id=run_id, agent=agent, version=version, dataset=str(dataset), dataset_sha256=digest(dataset),
        seed=seed, started_at=started_at, seconds=time.monotonic() - t0, summary=EvalSummary.of(results),
        cases=results,
    )
