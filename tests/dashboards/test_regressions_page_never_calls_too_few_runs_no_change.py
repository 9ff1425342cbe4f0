"""With too few runs to test anything, the Regressions page said "No metric changed beyond noise"
(a false all-clear) and drew empty drift charts with made-up axes. It must say that there are not
enough runs yet, and show no chart without points. AppTest against the real server loaded with a
handful of real kernel runs (far below the 30-run minimum)."""

from __future__ import annotations

from collections.abc import Callable

from tests.dashboards.conftest import LoadedServer, open_page, texts


def test_release_comparison_with_too_few_runs_says_so(loaded_server: LoadedServer, ui_env: Callable[..., None]) -> None:
    ui_env(loaded_server.url)
    at = open_page("regressions", {"comparison": "release"})
    assert not at.exception
    shown = texts(at)
    assert "Not enough runs to judge yet" in shown
    assert "No metric changed beyond noise" not in shown
    assert at.metric[0].value == "0"


def test_drift_with_too_few_runs_draws_no_empty_chart(loaded_server: LoadedServer, ui_env: Callable[..., None]) -> None:
    ui_env(loaded_server.url)
    at = open_page("regressions", {"comparison": "drift", "since": "all"})
    assert not at.exception
    shown = texts(at)
    assert "insufficient_data" in shown and "not enough runs per bucket to draw the trend yet" in shown
    assert not at.get("plotly_chart")
