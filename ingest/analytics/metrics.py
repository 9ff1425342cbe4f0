"""The metrics regressions are checked on, and which direction of change is a regression.

Why a closed table: alert rules and API parameters name metrics by these keys, so a typo is a
clear validation error rather than a comparison of nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tracer.conventions import StopReason


class MetricKind(StrEnum):
    PER_RUN = "per_run"  # one number per run: compared with Mann-Whitney U
    RATE = "rate"  # share of runs with a property: compared with a two-proportion test


@dataclass(frozen=True)
class Metric:
    key: str
    kind: MetricKind
    column: str  # runs column the value comes from (per-run metrics)
    higher_is_worse: bool = True
    stop_reason: str | None = None  # rate metrics: share of this stop reason; None = failure rate


PER_RUN_METRICS: dict[str, Metric] = {
    m.key: m
    for m in (
        Metric("steps", MetricKind.PER_RUN, "steps"),
        Metric("input_tokens", MetricKind.PER_RUN, "input_tokens"),
        Metric("output_tokens", MetricKind.PER_RUN, "output_tokens"),
        Metric("cost_usd", MetricKind.PER_RUN, "cost_usd"),
        Metric("duration_ms", MetricKind.PER_RUN, "duration_ms"),
        Metric("tool_errors", MetricKind.PER_RUN, "tool_errors"),
    )
}

FAILURE_RATE = Metric("failure_rate", MetricKind.RATE, "ok")
STOP_REASON_PREFIX = "stop_reason:"


def stop_reason_metric(reason: str) -> Metric:
    """The rate of one stop reason; a higher `finish` rate is an improvement, any other is worse."""
    return Metric(
        f"{STOP_REASON_PREFIX}{reason}", MetricKind.RATE, "stop_reason",
        higher_is_worse=reason != StopReason.FINISH.value, stop_reason=reason,
    )


def all_metric_keys() -> list[str]:
    return [*PER_RUN_METRICS, FAILURE_RATE.key, *(f"{STOP_REASON_PREFIX}{r.value}" for r in StopReason)]


def metric_by_key(key: str) -> Metric:
    """The metric named `key`; ValueError listing the valid names otherwise."""
    if key in PER_RUN_METRICS:
        return PER_RUN_METRICS[key]
    if key == FAILURE_RATE.key:
        return FAILURE_RATE
    if key.startswith(STOP_REASON_PREFIX):
        reason = key[len(STOP_REASON_PREFIX):]
        if reason in {r.value for r in StopReason}:
            return stop_reason_metric(reason)
    raise ValueError(f"unknown metric {key!r}; one of {', '.join(all_metric_keys())}")
