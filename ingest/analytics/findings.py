"""Turn two sets of runs per agent into findings: test every metric, correct across the whole
report, and flag only changes that are both significant and large enough.

Why both conditions: with thousands of runs a 1% change is "significant" but nobody should be
paged for it; with a dozen runs a 40% change is noise. The floor (`min_relative_change`) and the
Holm-corrected p-value (`alpha`, a family-wise error over every metric and agent of the report)
together are what separates a real shift from noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
from pydantic import BaseModel, Field

from ingest.analytics.metrics import (
    FAILURE_RATE,
    HANDOFF_RATE,
    PER_RUN_METRICS,
    STOP_REASON_PREFIX,
    Metric,
    MetricKind,
    is_every_score,
    metric_by_key,
    score_metric,
    stop_reason_metric,
)
from ingest.analytics.stats import TestResult, adjust, compare_rates, compare_samples
from tracer.conventions import StopReason

EXAMPLES_PER_SIDE = 3
# Family-wise error per report. Why 0.002 (bench/regression_sim.py, hundreds of seeds): at the
# former BH 0.01 a stable agent split 50 times flagged more than one finding on ~5% of seeds; at
# 0.002 on ~1%. Stricter costs power: +20% mean steps at 300 runs a side is z ~ 6 for ~10 tests,
# missed ~2.5% of the time at 0.002 and ~4% at 0.001. With ~10 metrics per agent these sample
# sizes allow no setting with both error rates far below 1%; more runs per side do.
DEFAULT_ALPHA = 0.002


class Verdict(StrEnum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    CHANGED = "changed"  # significant and large, but the metric has no better or worse direction
    NO_CHANGE = "no_change"
    INSUFFICIENT_DATA = "insufficient_data"


class RegressionConfig(BaseModel):
    """When a change counts. Defaults are deliberately strict: an alert nobody trusts is worse than none."""

    min_relative_change: float = Field(0.10, ge=0, description="Smallest |relative change| flagged (0.10 = 10%).")
    alpha: float = Field(
        DEFAULT_ALPHA, gt=0, lt=1,
        description="Family-wise error across the report (Holm): chance of flagging anything when nothing changed.",
    )
    min_samples: int = Field(30, ge=2, description="Runs needed on EACH side before a metric is tested.")
    confidence: float = Field(0.95, gt=0, lt=1, description="Level of the reported confidence intervals.")
    metrics: list[str] | None = Field(
        None, description="Metric keys to check; default: every per-run metric, failure_rate, handoff_rate (when a side has a "
        "hand-off), stop reasons and scores "
        "seen."
    )

    def score_names(self) -> list[str] | None:
        """The score names these metrics need (None: every score name; [] none, so no score is read)."""
        if self.metrics is None:
            return None
        names: list[str] = []
        for key in self.metrics:
            metric = metric_by_key(key)
            if is_every_score(metric):
                return None
            if metric.score is not None and metric.score not in names:
                names.append(metric.score)
        return names


class ScoreType(StrEnum):
    NUMERIC = "numeric"
    BOOLEAN = "boolean"
    CATEGORICAL = "categorical"


@dataclass
class ScoreColumn:
    """One score's run values over a RunSet, aligned with its trace_ids (see ingest/queries/score_metrics.py)."""

    data_type: ScoreType
    numbers: np.ndarray  # numeric value, boolean as 1/0; NaN where the run has no such score
    labels: list[str | None]  # categorical label, boolean as "true"/"false"; None where none


@dataclass
class RunSet:
    """The runs of one side of a comparison, column-wise; NULLs are NaN (per-run) or None."""

    trace_ids: list[str] = field(default_factory=list)
    values: dict[str, np.ndarray] = field(default_factory=dict)  # per-run metric key -> float array
    ok: list[bool | None] = field(default_factory=list)
    stop_reasons: list[str | None] = field(default_factory=list)
    handoffs: list[bool] = field(default_factory=list)  # handed to a human (runs.handoff_reason set)
    scores: dict[str, ScoreColumn] = field(default_factory=dict)  # score name -> its run values

    def __len__(self) -> int:
        return len(self.trace_ids)


@dataclass(frozen=True)
class Pair:
    """One comparison to make: an agent's baseline and current runs, with labels saying which is which."""

    agent: str | None
    baseline: RunSet
    current: RunSet
    baseline_label: str
    current_label: str
    release: str | None = None  # a cohort comparison's gray release


class SideSummary(BaseModel):
    label: str = Field(description="What this side is: a time window or an agent version.")
    n: int
    value: float | None = Field(description="Mean per run, or the proportion for rate metrics.")
    ci_low: float | None
    ci_high: float | None
    examples: list[str] = Field(default_factory=list, description="Trace ids of example runs.")


class Finding(BaseModel):
    metric: str
    agent: str | None
    comparison: str  # window | release | cohort
    release: str | None = Field(None, description="cohort: the gray release whose candidate is compared with its stable.")
    baseline: SideSummary
    current: SideSummary
    relative_change: float | None
    effect_size: float | None = Field(description="Rank-biserial r (per-run metrics) or Cohen's h (rates).")
    test: str | None
    p_value: float | None
    q_value: float | None = Field(description="p-value adjusted (Holm) across the whole report; flagged below alpha.")
    verdict: Verdict
    flagged: bool
    reason: str


def _score_type(pair: Pair, name: str) -> ScoreType | None:
    col = pair.current.scores.get(name) or pair.baseline.scores.get(name)
    return None if col is None else col.data_type


def _labels(pair: Pair, name: str) -> list[str]:
    cols = [side.scores[name] for side in (pair.baseline, pair.current) if name in side.scores]
    return sorted({label for col in cols for label in col.labels if label is not None})


def _expand_score(pair: Pair, metric: Metric) -> list[Metric]:
    """A score metric as the tests it stands for: `score:*` every score seen in the pair, a
    categorical `score:NAME` the share of each label seen (with no direction: none is known)."""
    if is_every_score(metric):
        names = sorted(set(pair.baseline.scores) | set(pair.current.scores))
        return [m for name in names for m in _expand_score(pair, score_metric(name))]
    assert metric.score is not None
    if metric.label is None and _score_type(pair, metric.score) is ScoreType.CATEGORICAL:
        return [score_metric(metric.score, label, directed=False) for label in _labels(pair, metric.score)]
    return [metric]


def metrics_for(pair: Pair, config: RegressionConfig) -> list[Metric]:
    if config.metrics is not None:
        chosen = [metric_by_key(k) for k in config.metrics]
        return [x for m in chosen for x in (_expand_score(pair, m) if m.kind is MetricKind.SCORE else [m])]
    # `finish` is left out by default: only finish has ok=true (design.md), so its rate is exactly
    # 1 - failure_rate and testing both would double-count every rate finding.
    reasons = sorted({r for r in (*pair.baseline.stop_reasons, *pair.current.stop_reasons) if r} - {StopReason.FINISH})
    scores = _expand_score(pair, metric_by_key("score:*"))
    # the hand-off rate only where a hand-off was seen, like a stop reason: agents that never hand
    # off are not charged one more test (and a stricter Holm correction) for it
    handoff = [HANDOFF_RATE] if any(pair.baseline.handoffs) or any(pair.current.handoffs) else []
    return [*PER_RUN_METRICS.values(), FAILURE_RATE, *handoff, *(stop_reason_metric(r) for r in reasons), *scores]


def _events(runs: RunSet, metric: Metric) -> tuple[np.ndarray, np.ndarray]:
    """(has a value, has the event) masks of a rate metric over `runs`."""
    if metric.key == HANDOFF_RATE.key:  # every run counts: one not handed off is a 0
        return np.ones(len(runs), dtype=bool), np.array(runs.handoffs, dtype=bool).reshape(len(runs))
    if metric.stop_reason is None:  # failure rate: only runs that report ok count
        known = np.array([o is not None for o in runs.ok], dtype=bool)
        event = np.array([o is False for o in runs.ok], dtype=bool)
    else:
        known = np.array([r is not None for r in runs.stop_reasons], dtype=bool)
        event = np.array([r == metric.stop_reason for r in runs.stop_reasons], dtype=bool)
    return known, event


def _score_events(runs: RunSet, metric: Metric, data_type: ScoreType) -> tuple[np.ndarray, np.ndarray]:
    """(has a value, has the event) of a boolean score (event: judged true) or a label's share."""
    assert metric.score is not None
    col = runs.scores.get(metric.score)
    if col is None or col.data_type is not data_type:
        empty = np.zeros(len(runs), dtype=bool)
        return empty, empty
    if data_type is ScoreType.BOOLEAN and metric.label is None:
        known = ~np.isnan(col.numbers)
        return known, known & (np.nan_to_num(col.numbers) >= 0.5)
    known = np.array([label is not None for label in col.labels], dtype=bool)
    return known, np.array([label == metric.label for label in col.labels], dtype=bool)


def _score_numbers(runs: RunSet, name: str) -> np.ndarray:
    col = runs.scores.get(name)
    return col.numbers if col is not None and col.data_type is ScoreType.NUMERIC else np.full(len(runs), np.nan)


def _test_score(pair: Pair, metric: Metric, config: RegressionConfig) -> tuple[TestResult, list[str], list[str]]:
    b, c = pair.baseline, pair.current
    assert metric.score is not None
    data_type = _score_type(pair, metric.score)
    if data_type is ScoreType.NUMERIC and metric.label is None:
        bv, cv = _score_numbers(b, metric.score), _score_numbers(c, metric.score)
        bm, cm = ~np.isnan(bv), ~np.isnan(cv)
        result = compare_samples(bv[bm], cv[cm], config.confidence)
        return result, _typical(b, bv, bm), _extreme(c, cv, cm, higher_is_worse=False)
    # a boolean score is its share judged true, or with a label (`score:correct=false`) that label's
    # share, whose floor is relative to it: 2% -> 10% judged false is +400%, where 98% -> 90% true is -8%
    testable = data_type is ScoreType.BOOLEAN or (data_type is ScoreType.CATEGORICAL and metric.label is not None)
    if not testable:  # no such score on either side, or a label asked of a numeric score
        return compare_rates(0, 0, 0, 0, config.confidence), [], []
    bk, be = _score_events(b, metric, data_type)
    ck, ce = _score_events(c, metric, data_type)
    result = compare_rates(int(be.sum()), int(bk.sum()), int(ce.sum()), int(ck.sum()), config.confidence)
    if data_type is ScoreType.BOOLEAN and metric.label is None:  # the evidence: the runs judged false
        return result, _with_event(b, bk & ~be), _with_event(c, ck & ~ce)
    return result, _with_event(b, be), _with_event(c, ce)


def _test(pair: Pair, metric: Metric, config: RegressionConfig) -> tuple[TestResult, list[str], list[str]]:
    b, c = pair.baseline, pair.current
    if metric.kind is MetricKind.SCORE:
        return _test_score(pair, metric, config)
    if metric.kind is MetricKind.PER_RUN:
        bv, cv = b.values.get(metric.key, np.array([])), c.values.get(metric.key, np.array([]))
        bm, cm = ~np.isnan(bv), ~np.isnan(cv)
        result = compare_samples(bv[bm], cv[cm], config.confidence)
        return result, _typical(b, bv, bm), _extreme(c, cv, cm, bool(metric.higher_is_worse))
    bk, be = _events(b, metric)
    ck, ce = _events(c, metric)
    result = compare_rates(int(be.sum()), int(bk.sum()), int(ce.sum()), int(ck.sum()), config.confidence)
    return result, _with_event(b, be), _with_event(c, ce)


def _typical(runs: RunSet, values: np.ndarray, mask: np.ndarray) -> list[str]:
    """Runs closest to the side's median: what "normal" looked like."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return []
    order = idx[np.argsort(np.abs(values[idx] - np.median(values[idx])), kind="stable")]
    return [runs.trace_ids[i] for i in order[:EXAMPLES_PER_SIDE]]


def _extreme(runs: RunSet, values: np.ndarray, mask: np.ndarray, higher_is_worse: bool) -> list[str]:
    """The worst runs of the side: the evidence a reader opens first."""
    idx = np.flatnonzero(mask)
    order = idx[np.argsort(-values[idx] if higher_is_worse else values[idx], kind="stable")]
    return [runs.trace_ids[i] for i in order[:EXAMPLES_PER_SIDE]]


def _with_event(runs: RunSet, event: np.ndarray) -> list[str]:
    return [runs.trace_ids[i] for i in np.flatnonzero(event)[:EXAMPLES_PER_SIDE]]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.1%}"


def build_findings(pairs: list[Pair], comparison: str, config: RegressionConfig) -> list[Finding]:
    """Every metric of every pair, flagged ones first (smallest q first)."""
    pending: list[tuple[Pair, Metric, TestResult, bool, list[str], list[str]]] = []
    for pair in pairs:
        for metric in metrics_for(pair, config):
            result, b_ex, c_ex = _test(pair, metric, config)
            enough = result.baseline.n >= config.min_samples and result.current.n >= config.min_samples
            pending.append((pair, metric, result, enough, b_ex, c_ex))
    q_iter = iter(adjust([r.p_value for _, _, r, enough, _, _ in pending if enough]))
    findings = []
    for pair, metric, raw, enough, b_ex, c_ex in pending:
        q = next(q_iter) if enough else None
        verdict, reason = _verdict(raw, q, metric, config)
        findings.append(
            Finding(
                metric=metric.key,
                agent=pair.agent,
                comparison=comparison,
                release=pair.release,
                baseline=SideSummary(label=pair.baseline_label, n=raw.baseline.n, value=raw.baseline.value,
                                     ci_low=raw.baseline.ci_low, ci_high=raw.baseline.ci_high, examples=b_ex),
                current=SideSummary(label=pair.current_label, n=raw.current.n, value=raw.current.value,
                                    ci_low=raw.current.ci_low, ci_high=raw.current.ci_high, examples=c_ex),
                relative_change=raw.relative_change,
                effect_size=raw.effect_size,
                test=raw.test if enough else None,
                p_value=raw.p_value if enough else None,
                q_value=q,
                verdict=verdict,
                flagged=verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.CHANGED),
                reason=reason,
            )
        )
    findings.sort(key=_order)
    return findings


def _order(f: Finding) -> tuple[bool, bool, float]:
    return (not f.flagged, f.verdict is not Verdict.REGRESSION, f.q_value if f.q_value is not None else 2.0)


def _verdict(r: TestResult, q: float | None, metric: Metric, config: RegressionConfig) -> tuple[Verdict, str]:
    if q is None:
        return Verdict.INSUFFICIENT_DATA, (
            f"needs {config.min_samples} runs on each side, has {r.baseline.n} (baseline) and {r.current.n} (current)"
        )
    if r.baseline.value is None or r.current.value is None:
        return Verdict.INSUFFICIENT_DATA, "no values on one side"
    diff = r.current.value - r.baseline.value
    if q >= config.alpha:
        return Verdict.NO_CHANGE, f"not significant: q={q:.3g} >= alpha {config.alpha:g} ({_pct(r.relative_change)})"
    large = abs(r.relative_change) >= config.min_relative_change if r.relative_change is not None else diff != 0
    if not large:
        return Verdict.NO_CHANGE, (
            f"change {_pct(r.relative_change)} is below the {config.min_relative_change:.0%} floor (q={q:.3g})"
        )
    if metric.higher_is_worse is None:
        return Verdict.CHANGED, f"{_pct(r.relative_change)} with q={q:.3g} < {config.alpha:g} (no direction: name the label)"
    worse = (diff > 0) == metric.higher_is_worse
    verdict = Verdict.REGRESSION if worse else Verdict.IMPROVEMENT
    return verdict, f"{_pct(r.relative_change)} with q={q:.3g} < {config.alpha:g}"


__all__ = [
    "DEFAULT_ALPHA", "STOP_REASON_PREFIX", "Finding", "Pair", "RegressionConfig", "RunSet", "ScoreColumn", "ScoreType",
    "SideSummary", "Verdict", "build_findings",
]
