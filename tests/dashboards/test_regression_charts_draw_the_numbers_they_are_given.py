"""The Regressions page's table rows and drift chart are pure functions of the API's answer: the
rows show each side's value, interval and n, the change, p and Holm q; the figure draws the bucket
means, the baseline band around the reference mean and a marker on every alarmed bucket."""

from __future__ import annotations

from datetime import datetime, timedelta

from dashboards.alerts_models import DriftPoint, DriftResult, Finding, FindingSide
from dashboards.regression_charts import drift_figure, findings_rows


def test_findings_rows_carry_values_intervals_and_both_p_values() -> None:
    f = Finding(
        metric="steps", agent="shop", verdict="regression", flagged=True, relative_change=0.2, p_value=1e-9,
        q_value=6e-9, effect_size=0.31, reason="+20.0% with q=6e-09 < 0.001",
        baseline=FindingSide(label="version 1", n=300, value=6.0, ci_low=5.8, ci_high=6.2),
        current=FindingSide(label="version 2", n=300, value=7.2, ci_low=6.9, ci_high=7.5),
    )
    empty = Finding(metric="tool_errors", agent=None, verdict="insufficient_data",
                    baseline=FindingSide(label="version 1", n=3), current=FindingSide(label="version 2", n=2))
    rows = findings_rows([f, empty])
    assert rows[0] == {
        "verdict": "regression", "agent": "shop", "metric": "steps", "change": "20.0%", "p": "1e-09",
        "q (Holm)": "6e-09", "effect": "+0.31", "baseline (version 1)": "6 [5.8, 6.2] (n=300)",
        "current (version 2)": "7.2 [6.9, 7.5] (n=300)", "why": "+20.0% with q=6e-09 < 0.001",
    }
    assert rows[1]["agent"] == "(none)" and rows[1]["p"] == "—" and rows[1]["baseline (version 1)"] == "— (n=3)"
    assert findings_rows([]) == []


def test_drift_figure_draws_means_band_and_alarms() -> None:
    t0 = datetime(2025, 1, 1)
    points = [DriftPoint(start=t0 + timedelta(days=i), runs=100, mean=6.0 + 0.1 * i, alarm=i >= 3) for i in range(5)]
    points.append(DriftPoint(start=t0 + timedelta(days=5), runs=0, mean=None))  # empty bucket: not drawn
    fig = drift_figure(DriftResult(agent="shop", verdict="drift_up", flagged=True, reference_mean=6.0,
                                   reference_sd=2.0, points=points))
    band, means, alarms = fig.data
    assert list(means.y) == [6.0, 6.1, 6.2, 6.3, 6.4] and len(means.x) == 5
    assert max(band.y) == 6.0 + 2 * 2.0 / 10 and min(band.y) == 6.0 - 2 * 2.0 / 10
    assert list(alarms.y) == [6.3, 6.4]
    assert "shop" in fig.layout.title.text
