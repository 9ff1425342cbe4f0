"""Chart functions are pure: the figure holds exactly the numbers given, errors are red, and
empty input gives a "no data" figure instead of an exception."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dashboards import charts
from dashboards.models import Failures, Overview, Span, Tools
from dashboards.trace_view import BudgetPoint

T0 = datetime(2025, 3, 1, tzinfo=UTC)


def _span(i: int, start_ms: float, dur_ms: float, op: str = "llm", error: bool = False, depth: int = 1) -> Span:
    return Span(span_id=f"{i:016x}", name=f"s{i}", operation=op, depth=depth,
                start_time=T0 + timedelta(milliseconds=start_ms),
                end_time=T0 + timedelta(milliseconds=start_ms + dur_ms), duration_ms=dur_ms,
                status="ERROR" if error else "UNSET", error_type="timeout" if error else None)


def test_waterfall_bars_start_and_last_as_the_spans_did() -> None:
    spans = [_span(0, 0, 100, "agent", depth=0), _span(1, 10, 40), _span(2, 60, 30, "tool", error=True)]
    bar = charts.waterfall_figure(spans).data[0]
    assert list(bar.base) == [0.0, 10.0, 60.0] and list(bar.x) == [100.0, 40.0, 30.0]
    assert bar.marker.color[2] == charts.ERROR_COLOR and bar.marker.color[1] == charts.OPERATION_COLORS["llm"]
    assert list(bar.customdata) == [s.span_id for s in spans]


def test_waterfall_window_keeps_the_trace_time_axis() -> None:
    spans = [_span(i, i * 10, 5) for i in range(1000)]
    bar = charts.waterfall_figure(spans, offset=500, limit=300).data[0]
    assert len(bar.x) == 300 and bar.base[0] == 5000.0 and bar.y[0].startswith("  500")


def test_budget_lines_are_percent_of_limit() -> None:
    points = [BudgetPoint(1, {"steps": 0, "cost_usd": 0.0}, {"steps": 4, "cost_usd": 1.0}),
              BudgetPoint(2, {"steps": 1, "cost_usd": 0.5}, {"steps": 4, "cost_usd": 1.0}),
              BudgetPoint(3, {"steps": 2, "seconds": 3.0}, {"steps": 4})]
    fig = charts.budget_figure(points)
    lines = {t.name: (list(t.x), list(t.y)) for t in fig.data}
    assert lines == {"steps": ([1, 2, 3], [0.0, 25.0, 50.0]), "cost_usd": ([1, 2], [0.0, 50.0])}


def test_tool_cost_is_stacked_in_three_parts() -> None:
    tools = Tools.model_validate({"tools": [{"tool": "search", "cost": {"direct": 1, "decision": 2, "carry": 3,
                                                                         "total": 6}}]})
    fig = charts.tool_cost_figure(tools)
    assert [(t.name, list(t.x)) for t in fig.data] == [("direct", [1.0]), ("decision", [2.0]), ("carry", [3.0])]
    assert fig.layout.barmode == "stack"


def test_overview_series_and_stop_reasons() -> None:
    ov = Overview.model_validate({
        "totals": {"runs": 3, "ok_runs": 2, "failed_runs": 1},
        "stop_reasons": [{"stop_reason": "finish", "runs": 2}, {"stop_reason": "timeout", "runs": 1}],
        "series": [{"start": "2025-03-01T00:00:00Z", "ok_runs": 2, "failed_runs": 1, "success_rate": 2 / 3, "runs": 3}],
    })
    runs = charts.runs_over_time_figure(ov)
    assert [list(t.y) for t in runs.data[:2]] == [[2], [1]] and round(runs.data[2].y[0], 1) == 66.7
    reasons = charts.stop_reasons_figure(ov).data[0]
    assert list(reasons.y) == ["timeout", "finish"] and list(reasons.marker.color) == [charts.ERROR_COLOR, charts.OK_COLOR]


def test_empty_inputs_give_no_data_figures() -> None:
    empty = Overview()
    for fig in (charts.runs_over_time_figure(empty), charts.cost_over_time_figure(empty),
                charts.stop_reasons_figure(empty), charts.waterfall_figure([]), charts.budget_figure([]),
                charts.failures_figure(Failures()), charts.tool_cost_figure(Tools()),
                charts.tool_latency_figure(Tools())):
        assert not fig.data and fig.layout.annotations[0].text.startswith(("no ", "this run"))
