"""The Replanning page's charts are pure: given data they draw exactly its numbers, and given
nothing (or a server that lacks fields) they draw a "no data" figure instead of raising."""

from __future__ import annotations

from dashboards import replanning_charts as charts
from dashboards.replanning_models import Replanning

DATA = Replanning.model_validate({
    "plan_runs": 4,
    "by_granularity": [
        {"key": "global", "replans": 1, "admitted": 1},
        {"key": "patch", "replans": 4, "admitted": 2, "refused": 1, "unusable": 1},
        {"key": "tail", "replans": 2, "admitted": 1, "refused": 1},
    ],
    "by_cause": [{"key": "semantic:exception", "replans": 5, "admitted": 3, "refused": 1, "unusable": 1}],
    "trips": [{"verdict": "token_gate", "trips": 2}, {"verdict": "oscillation", "trips": 1}],
    "exhausted": {"runs": 4, "without_replan_span": 1},
    "versions": [{"versions": 2, "runs": 3}, {"versions": 1, "runs": 1}],
    "cost": {"replan_cost_usd": 0.25, "reexecution_cost_usd": 0.5, "runs_cost_usd": 2.0},
    "runs": [
        {"trace_id": "a" * 32, "agent": "pe", "replan_cost_usd": 0.2, "reexecution_cost_usd": 0.5, "run_cost_usd": 1.5},
        {"trace_id": "b" * 32, "agent": "pe", "replan_cost_usd": 0.05, "run_cost_usd": None},
    ],
    "a_field_from_a_newer_server": {"ignored": True},
})


def test_granularities_in_order_of_how_much_they_throw_away() -> None:
    fig = charts.granularity_figure(DATA)
    assert [t.name for t in fig.data] == ["admitted", "refused", "unusable reply"]
    assert list(fig.data[0].x) == ["patch", "tail", "global"]
    assert [list(t.y) for t in fig.data] == [[2, 1, 1], [1, 1, 0], [1, 0, 0]]


def test_trips_include_breakers_that_tripped_before_a_replan_call() -> None:
    bar = charts.trips_figure(DATA).data[0]
    assert dict(zip(bar.y, bar.x, strict=True)) == {"token_gate": 2, "oscillation": 1, charts.NO_SPAN: 1}


def test_versions_sorted_and_cost_split_adds_up_to_the_runs_total() -> None:
    bar = charts.versions_figure(DATA).data[0]
    assert (list(bar.x), list(bar.y)) == (["1", "2"], [1, 3])
    pie = charts.cost_split_figure(DATA).data[0]
    assert list(pie.values) == [0.25, 0.5, 1.25] and sum(pie.values) == DATA.cost.runs_cost_usd


def test_per_run_rest_is_never_negative() -> None:
    fig = charts.runs_cost_figure(DATA)
    replan, reexec, rest = (list(t.x) for t in fig.data)
    assert (replan, reexec, rest) == ([0.2, 0.05], [0.5, 0.0], [0.8, 0.0])


def test_empty_data_gives_no_data_figures() -> None:
    empty = Replanning.model_validate({})
    for fn in (charts.granularity_figure, charts.cause_figure, charts.trips_figure, charts.versions_figure,
               charts.cost_split_figure, charts.runs_cost_figure):
        fig = fn(empty)
        assert not fig.data
        assert fig.layout.annotations and "no " in fig.layout.annotations[0].text
