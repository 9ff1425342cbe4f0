"""Two-sample tests, confidence intervals and effect sizes, all computed by scipy.

Why Mann-Whitney U for per-run metrics: steps, tokens, cost and durations are skewed and
heavy-tailed, so a t-test's normality assumption fails exactly where regressions hide (a long
tail of runs that loop). Why the chi-square test without continuity correction for rates: on a
2x2 table it IS the two-proportion z test (chi2 = z^2), and scipy ships it. Why Holm (family-wise
error) and not Benjamini-Hochberg: one report checks every metric of every agent and the alert
evaluator re-checks it every few minutes, so what must stay rare is "this report flags anything by
chance at all", not the share of false flags among many true ones (BH's promise, which with no
true change is no stronger). Holm bounds it by `alpha` under any dependence between the metrics
(steps, tokens, cost and duration move together) and still flags every metric of a real shift,
whose p-values are tiny. Under a real shift BH would be slightly more powerful (bench: +20% at
300 runs a side missed 2.1% vs 2.6% at 0.002); the clean per-evaluation guarantee was preferred.
bench/regression_sim.py measures both sides over many seeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
MIN_EXPECTED = 5.0  # Cochran's rule for the chi-square approximation


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its sample size, central value and confidence interval."""

    n: int
    value: float | None  # mean (per-run metrics) or proportion (rates); None when n == 0
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class TestResult:
    baseline: Side
    current: Side
    p_value: float  # two-sided, before correction
    effect_size: float | None  # rank-biserial correlation (per-run) or Cohen's h (rates)
    relative_change: float | None  # (current - baseline) / baseline; None when baseline is 0
    test: str


def relative_change(baseline: float | None, current: float | None) -> float | None:
    if baseline is None or current is None or baseline == 0:
        return None
    return (current - baseline) / abs(baseline)


def mean_side(values: np.ndarray, confidence: float = CONFIDENCE) -> Side:
    """Mean with a Student-t interval (a sound interval for a mean at the sample sizes we require)."""
    n = int(values.size)
    if n == 0:
        return Side(0, None, None, None)
    mean = float(np.mean(values))
    if n < 2:
        return Side(n, mean, mean, mean)
    sem = float(stats.sem(values))
    if sem == 0 or not math.isfinite(sem):
        return Side(n, mean, mean, mean)
    low, high = stats.t.interval(confidence, n - 1, loc=mean, scale=sem)
    return Side(n, mean, float(low), float(high))


def rate_side(k: int, n: int, confidence: float = CONFIDENCE) -> Side:
    """Proportion with a Wilson interval (stays inside [0, 1] and behaves near 0, unlike Wald)."""
    if n == 0:
        return Side(0, None, None, None)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Side(n, k / n, float(ci.low), float(ci.high))


def compare_samples(baseline: np.ndarray, current: np.ndarray, confidence: float = CONFIDENCE) -> TestResult:
    """Mann-Whitney U (two-sided) of current vs baseline; effect = rank-biserial r in [-1, 1],
    positive when current runs tend to be larger."""
    b, c = mean_side(baseline, confidence), mean_side(current, confidence)
    p_value, effect = 1.0, None
    if b.n and c.n:
        if np.all(baseline == baseline[0]) and np.all(current == baseline[0]):
            p_value, effect = 1.0, 0.0  # identical constants: nothing to test (scipy would give nan)
        else:
            res = stats.mannwhitneyu(current, baseline, alternative="two-sided")
            p_value = float(res.pvalue) if math.isfinite(res.pvalue) else 1.0
            effect = float(2.0 * res.statistic / (c.n * b.n) - 1.0)
    return TestResult(b, c, p_value, effect, relative_change(b.value, c.value), "mann_whitney_u")


def compare_rates(k_base: int, n_base: int, k_cur: int, n_cur: int, confidence: float = CONFIDENCE) -> TestResult:
    """Two-proportion z test (as chi-square without continuity correction); effect = Cohen's h.

    When an expected cell count is below 5 (rare stop reasons) the chi-square approximation is
    anti-conservative, so Fisher's exact test is used instead (Cochran's rule).
    """
    b, c = rate_side(k_base, n_base, confidence), rate_side(k_cur, n_cur, confidence)
    p_value, effect, test = 1.0, None, "two_proportion_z"
    if b.n and c.n:
        table = np.array([[k_cur, n_cur - k_cur], [k_base, n_base - k_base]])
        if (table.sum(axis=0) > 0).all():  # a column of zeros (no event on either side) tests nothing
            expected = stats.contingency.expected_freq(table)
            if expected.min() >= MIN_EXPECTED:
                p_value = float(stats.chi2_contingency(table, correction=False).pvalue)
            else:
                test = "fisher_exact"
                p_value = float(stats.fisher_exact(table).pvalue)
            p_value = p_value if math.isfinite(p_value) else 1.0
        assert b.value is not None and c.value is not None
        effect = 2.0 * math.asin(math.sqrt(c.value)) - 2.0 * math.asin(math.sqrt(b.value))
    return TestResult(b, c, p_value, effect, relative_change(b.value, c.value), test)


def adjust(p_values: list[float]) -> list[float]:
    """Holm step-down adjusted p-values over one report's whole family of tests: a finding is
    significant when its adjusted value is below alpha, and then P(any chance finding) <= alpha.

    scipy ships only BH/BY (`false_discovery_control`); Holm is the Bonferroni bound applied
    step-down: sort, multiply the i-th smallest by (m - i), keep the running maximum, cap at 1.
    """
    if not p_values:
        return []
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((p.size - np.arange(p.size)) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(stepped, 1.0)
    return [float(q) for q in adjusted]
