"""The correction across a report bounds the chance that a report flags ANYTHING when nothing changed
(family-wise error, Holm), not only the share of false flags among true ones (Benjamini-Hochberg).

Why it matters: steps, tokens, cost and duration move together, so one chance shift used to light up
several metrics at once, and the A/A acceptance (50 splits, at most 1 flagged finding) failed on ~5%
of seeds. The rates over many seeds are measured by bench/regression_sim.py; these tests pin the
procedure itself.
"""

from __future__ import annotations

import numpy as np

from ingest.analytics.findings import DEFAULT_ALPHA, Pair, RegressionConfig, RunSet, build_findings
from ingest.analytics.stats import adjust


def test_holm_adjusted_values_match_the_reference_procedure() -> None:
    # R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") -> 0.03 0.06 0.06 0.02
    assert np.allclose(adjust([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    # ties keep the running maximum; values are capped at 1
    assert np.allclose(adjust([0.5, 0.5, 0.9]), [1.0, 1.0, 1.0])
    assert adjust([]) == [] and adjust([0.2]) == [0.2]


def test_report_flags_anything_under_a_global_null_at_most_alpha_of_the_time() -> None:
    rng = np.random.default_rng(3)
    alpha, trials, metrics = 0.05, 4000, 11
    any_flag = sum(min(adjust(list(rng.random(metrics)))) < alpha for _ in range(trials)) / trials
    assert any_flag < alpha * 1.25  # ~alpha for independent tests; BH would be the same here, Bonferroni less
    # the same 11 p-values: BH flags a family of four moderately small ones, Holm does not
    ps = [0.004, 0.0045, 0.005, 0.0055, *([0.5] * 7)]
    assert min(adjust(ps)) > 0.04


def _runs(rng: np.random.Generator, n: int, scale: float) -> RunSet:
    steps = np.floor((1 + rng.poisson(5, n)) * scale + rng.random(n))
    tokens = steps * rng.normal(400, 80, n)
    return RunSet(
        trace_ids=[f"{i:032x}" for i in range(n)],
        values={"steps": steps, "input_tokens": tokens, "cost_usd": tokens * 1.5e-7},
        ok=[True] * n, stop_reasons=["finish"] * n,
    )


def test_a_real_shift_still_flags_every_metric_that_moved_with_it() -> None:
    rng = np.random.default_rng(8)
    config = RegressionConfig(metrics=["steps", "input_tokens", "cost_usd", "failure_rate"])
    assert config.alpha == DEFAULT_ALPHA == 0.002
    pair = Pair("agent", _runs(rng, 300, 1.0), _runs(rng, 300, 1.2), "version 1", "version 2")
    flagged = {f.metric for f in build_findings([pair], "release", config) if f.flagged}
    assert flagged == {"steps", "input_tokens", "cost_usd"}
