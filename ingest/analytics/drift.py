"""CUSUM control chart on the mean steps per run, so a slow creep is caught and not only a jump.

Why CUSUM on bucket means standardized by the reference period's run-level spread: a two-window
comparison misses +1%/day because each day looks like the one before; the cumulative sum adds up
the small, persistent excess until it crosses the decision interval `h`. `k` (in standard errors)
is the slack that keeps ordinary noise from accumulating.

Why k=1, h=6 and not the textbook k=0.5, h=5 (in-control run length ~465 buckets two-sided, for a
KNOWN mean): here the reference mean is estimated from `reference_buckets` buckets, and its error
is shared by every later bucket's z, so the textbook chart false-alarms on ~8% of stable agents
within two weeks (7 reference days). k=1, h=6 brings that to ~0.3% and still catches +1% mean
steps per day within two weeks in >99% of cases from ~120 runs a day (bench/regression_sim.py).
Below that traffic no chart can do both: at 60 runs a day the creep is only ~3 standard errors
after 10 days.
Caveat: buckets are assumed to differ only by sampling noise; real day-to-day variation beyond
that (e.g. weekday traffic mix) makes the chart more sensitive, which `min_bucket_runs` and a
larger `h` temper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, Field

DEFAULT_K = 1.0
DEFAULT_H = 6.0


class DriftConfig(BaseModel):
    bucket: str = Field("1d", description="Bucket length (s, m, h, d, w), e.g. 1d or 6h.")
    reference_buckets: int = Field(7, ge=2, description="First buckets of the range that define 'normal'.")
    k: float = Field(DEFAULT_K, ge=0, description="CUSUM slack, in standard errors of a bucket mean.")
    h: float = Field(DEFAULT_H, gt=0, description="CUSUM decision interval, in standard errors.")
    min_bucket_runs: int = Field(5, ge=1, description="Buckets with fewer runs are skipped.")


@dataclass(frozen=True)
class BucketStats:
    start: datetime
    n: int
    total: float  # sum of steps
    total_sq: float  # sum of squared steps


class DriftPoint(BaseModel):
    start: datetime
    runs: int
    mean: float | None
    z: float | None = Field(description="Bucket mean minus the reference mean, in standard errors of that difference.")
    cusum_up: float
    cusum_down: float
    alarm: bool


class DriftResult(BaseModel):
    agent: str | None
    metric: str = "steps"
    verdict: str  # drift_up | drift_down | in_control | insufficient_data
    flagged: bool
    reference_mean: float | None
    reference_sd: float | None
    reference_runs: int
    current_mean: float | None = Field(description="Mean of the last bucket with enough runs.")
    relative_change: float | None
    first_alarm: datetime | None = Field(description="Start of the first bucket where the CUSUM crossed h.")
    reason: str
    points: list[DriftPoint]
    examples: list[str] = Field(default_factory=list, description="Trace ids of the latest bucket's longest runs.")


def cusum(agent: str | None, buckets: list[BucketStats], config: DriftConfig) -> DriftResult:
    """Run the two-sided tabular CUSUM over `buckets` (ordered by time, empty ones allowed)."""
    usable = [b for b in buckets if b.n >= config.min_bucket_runs]
    ref = usable[: config.reference_buckets]
    ref_n = sum(b.n for b in ref)
    if len(ref) < config.reference_buckets or ref_n < 2:
        return DriftResult(
            agent=agent, verdict="insufficient_data", flagged=False, reference_mean=None, reference_sd=None,
            reference_runs=ref_n, current_mean=None, relative_change=None, first_alarm=None, points=[],
            reason=f"needs {config.reference_buckets} reference buckets of >= {config.min_bucket_runs} runs, "
            f"has {len(ref)}",
        )
    mu0 = sum(b.total for b in ref) / ref_n
    var0 = max(0.0, (sum(b.total_sq for b in ref) - ref_n * mu0 * mu0) / (ref_n - 1))
    sd0 = math.sqrt(var0) or 1e-9
    up = down = 0.0
    first_alarm: datetime | None = None
    points = []
    last_mean: float | None = None
    after_ref = {id(b) for b in usable[config.reference_buckets:]}
    for b in buckets:
        if id(b) not in after_ref:
            mean = b.total / b.n if b.n else None
            points.append(DriftPoint(start=b.start, runs=b.n, mean=mean, z=None, cusum_up=0.0, cusum_down=0.0,
                                     alarm=False))
            continue
        mean = b.total / b.n
        z = (mean - mu0) / (sd0 * math.sqrt(1.0 / b.n + 1.0 / ref_n))
        up = max(0.0, up + z - config.k)
        down = max(0.0, down - z - config.k)
        alarm = up > config.h or down > config.h
        if alarm and first_alarm is None:
            first_alarm = b.start
        last_mean = mean
        points.append(DriftPoint(start=b.start, runs=b.n, mean=mean, z=z, cusum_up=up, cusum_down=down, alarm=alarm))
    rel = None if last_mean is None or mu0 == 0 else (last_mean - mu0) / mu0
    if up > config.h:
        verdict, reason = "drift_up", f"CUSUM up {up:.1f} > h={config.h:g} (mean {last_mean:.2f} vs {mu0:.2f})"
    elif down > config.h:
        verdict, reason = "drift_down", f"CUSUM down {down:.1f} > h={config.h:g} (mean {last_mean:.2f} vs {mu0:.2f})"
    else:
        verdict, reason = "in_control", f"CUSUM up {up:.1f}, down {down:.1f} within h={config.h:g}"
    return DriftResult(
        agent=agent, verdict=verdict, flagged=verdict != "in_control", reference_mean=mu0, reference_sd=sd0,
        reference_runs=ref_n, current_mean=last_mean, relative_change=rel, first_alarm=first_alarm,
        reason=reason, points=points,
    )
