"""Score metrics join the report's Holm family instead of adding chances of their own: with every
score of the same distribution on both sides (A/A: a boolean, a 1-5 numeric and a three-label
categorical score, with the run metrics), reports flag anything about as rarely as alpha says; and
a label's share is tested once per label, not once per label per direction."""

from __future__ import annotations

import numpy as np

from ingest.analytics.findings import Pair, RegressionConfig, RunSet, ScoreColumn, ScoreType, build_findings

N = 300
TRIALS = 300
TONES = np.array(["friendly", "neutral", "curt"])


def _side(rng: np.random.Generator) -> RunSet:
    steps = np.floor(1 + rng.poisson(5, N) + rng.random(N))
    correct = (rng.random(N) < 0.85).astype(float)
    helpful = np.clip(np.round(rng.normal(4.0, 0.8, N)), 1, 5)
    tone = list(TONES[rng.choice(3, N, p=[0.6, 0.3, 0.1])])
    return RunSet(
        trace_ids=[f"{i:032x}" for i in range(N)], values={"steps": steps}, ok=[True] * N,
        stop_reasons=["finish"] * N,
        scores={
            "correct": ScoreColumn(ScoreType.BOOLEAN, correct, ["true" if c else "false" for c in correct]),
            "helpfulness": ScoreColumn(ScoreType.NUMERIC, helpful, [None] * N),
            "tone": ScoreColumn(ScoreType.CATEGORICAL, np.full(N, np.nan), tone),
        },
    )


def test_a_and_a_reports_with_scores_rarely_flag_anything() -> None:
    rng = np.random.default_rng(21)
    config = RegressionConfig(min_relative_change=0.0)  # the floor off: only the correction protects
    flagged_reports = 0
    tested: set[str] = set()
    for _ in range(TRIALS):
        findings = build_findings([Pair("agent", _side(rng), _side(rng), "a", "b")], "release", config)
        tested |= {f.metric for f in findings if f.metric.startswith("score:")}
        flagged_reports += any(f.flagged for f in findings)
    assert tested == {"score:correct", "score:helpfulness", "score:tone=curt", "score:tone=friendly",
                      "score:tone=neutral"}
    # alpha = 0.002 per report: ~0.6 of 300 expected; 4 would be a 7x excess (Poisson p < 0.005)
    assert flagged_reports <= 3, flagged_reports
