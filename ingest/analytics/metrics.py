"""The metrics regressions are checked on, and which direction of change is a regression.

Why a closed table: alert rules and API parameters name metrics by these keys, so a typo is a
clear validation error rather than a comparison of nothing. Score metrics are the one open family
(`score:NAME`, any score name a client sends), but their keys are still parsed here, in one place.

Score metrics (design.md §4 "Score metrics"): one value per scored run; which test applies follows
the score's data type, known only from the data, so their kind is SCORE and the report resolves it:
numeric scores are compared per run with Mann-Whitney U like steps, boolean scores as the share of
runs judged true, a categorical label (`score:NAME=LABEL`) as the share of runs given that label,
all with the same two-proportion test, Holm correction, floor and minimum sample as every metric.
Why higher is better for numeric and boolean scores: a score is a judgment of quality (correct,
helpfulness, relevance); a named label is one the reader watches (`score:tone=rude`), so a rising
share of it is worse, as for a stop reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tracer.conventions import StopReason


class MetricKind(StrEnum):
    PER_RUN = "per_run"  # one number per run: compared with Mann-Whitney U
    RATE = "rate"  # share of runs with a property: compared with a two-proportion test
    SCORE = "score"  # a score's value per scored run: per-run or rate, by the score's data type


@dataclass(frozen=True)
class Metric:
    key: str
    kind: MetricKind
    column: str  # runs column the value comes from (per-run metrics)
    # None: no direction (a categorical label's share found by expanding `score:NAME`): a significant,
    # large change is reported as `changed`, never as a regression or an improvement
    higher_is_worse: bool | None = True
    stop_reason: str | None = None  # rate metrics: share of this stop reason; None = failure rate
    score: str | None = None  # score metrics: the score's name
    label: str | None = None  # score metrics: the share of runs given this label (categorical scores)


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
# Share of runs handed to a human (runs.handoff_reason set; kernel/handoff.py): the documents'
# "transfer-to-human rate". Every run counts in the denominator (a run with no hand-off is a 0).
HANDOFF_RATE = Metric("handoff_rate", MetricKind.RATE, "handoff_reason")
STOP_REASON_PREFIX = "stop_reason:"
SCORE_PREFIX = "score:"
EVERY_SCORE = "*"  # `score:*`: every score seen in the compared runs (alert rules, built-in rules)
_MAX_SCORE_NAME = 200  # ingest/scores/model.py MAX_NAME: a longer name has no scores to compare


def stop_reason_metric(reason: str) -> Metric:
    """The rate of one stop reason; a higher `finish` rate is an improvement, any other is worse."""
    return Metric(
        f"{STOP_REASON_PREFIX}{reason}", MetricKind.RATE, "stop_reason",
        higher_is_worse=reason != StopReason.FINISH.value, stop_reason=reason,
    )


def score_metric(name: str, label: str | None = None, directed: bool = True) -> Metric:
    """`score:NAME` (higher is better) or `score:NAME=LABEL` (its share rising is worse; without
    direction when `directed` is false, i.e. found by expanding a categorical `score:NAME`)."""
    key = f"{SCORE_PREFIX}{name}" if label is None else f"{SCORE_PREFIX}{name}={label}"
    worse: bool | None = False if label is None else (True if directed else None)
    return Metric(key, MetricKind.SCORE, "scores", higher_is_worse=worse, score=name, label=label)


def is_every_score(metric: Metric) -> bool:
    return metric.kind is MetricKind.SCORE and metric.score == EVERY_SCORE


def all_metric_keys() -> list[str]:
    return [
        *PER_RUN_METRICS, FAILURE_RATE.key, HANDOFF_RATE.key, *(f"{STOP_REASON_PREFIX}{r.value}" for r in StopReason),
        f"{SCORE_PREFIX}<name>", f"{SCORE_PREFIX}<name>=<label>", f"{SCORE_PREFIX}{EVERY_SCORE}",
    ]


def _score_by_key(rest: str) -> Metric:
    name, sep, label = rest.partition("=")
    name = name.strip()
    if not 1 <= len(name) <= _MAX_SCORE_NAME:
        raise ValueError(f"score metric {SCORE_PREFIX}{rest!r}: the score name must be 1 to {_MAX_SCORE_NAME} characters")
    if name == EVERY_SCORE and sep:
        raise ValueError(f"{SCORE_PREFIX}{EVERY_SCORE} takes no label")
    if sep and not label:
        raise ValueError(f"score metric {SCORE_PREFIX}{rest!r}: the label after '=' is empty")
    return score_metric(name, label if sep else None)


DRIFT_METRICS = "mean steps per run (steps) or a score (score:NAME, score:NAME=LABEL)"


def drift_metric(key: str) -> Metric:
    """The metric a drift chart may watch: mean steps per run, or a score's mean (share); ValueError otherwise."""
    metric = metric_by_key(key)
    if metric.key != "steps" and (metric.kind is not MetricKind.SCORE or metric.score == EVERY_SCORE):
        raise ValueError(f"drift watches {DRIFT_METRICS}, not {key!r}")
    return metric


def metric_by_key(key: str) -> Metric:
    """The metric named `key`; ValueError listing the valid names otherwise."""
    if key in PER_RUN_METRICS:
        return PER_RUN_METRICS[key]
    if key == FAILURE_RATE.key:
        return FAILURE_RATE
    if key == HANDOFF_RATE.key:
        return HANDOFF_RATE
    if key.startswith(STOP_REASON_PREFIX):
        reason = key[len(STOP_REASON_PREFIX):]
        if reason in {r.value for r in StopReason}:
            return stop_reason_metric(reason)
    if key.startswith(SCORE_PREFIX):
        return _score_by_key(key[len(SCORE_PREFIX):])
    raise ValueError(f"unknown metric {key!r}; one of {', '.join(all_metric_keys())}")
