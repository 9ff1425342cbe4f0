"""The SQL page's chart builder draws exactly the answer's numbers: one trace per y column, or per
value of the colour column, in the answer's row order; a name that is HTML stays text; an answer it
cannot draw gives a figure saying so, never an exception.

The failure this covers: a chart builder that reorders, drops or mislabels rows shows a different
answer than the table right above it.
"""

from __future__ import annotations

from dashboards.sql_charts import CHART_KINDS, sql_figure
from dashboards.sql_models import SqlAnswer

ANSWER = SqlAnswer.model_validate({
    "columns": [{"name": "day", "type": "TIMESTAMP"}, {"name": "agent", "type": "VARCHAR"},
                {"name": "runs", "type": "BIGINT"}, {"name": "cost_usd", "type": "DOUBLE"}],
    "rows": [["2025-03-01T00:00:00Z", "refund", 3, 0.5], ["2025-03-01T00:00:00Z", "<b>x</b>", 1, None],
             ["2025-03-02T00:00:00Z", "refund", 4, 0.25]],
    "row_count": 3,
})


def test_one_trace_per_y_column_with_the_rows_in_order() -> None:
    for kind in CHART_KINDS:
        fig = sql_figure(ANSWER, kind, "day", ["runs", "cost_usd"])
        assert [t.name for t in fig.data] == ["runs", "cost_usd"]
        assert list(fig.data[0].x) == [r[0] for r in ANSWER.rows]
        assert list(fig.data[0].y) == [3.0, 1.0, 4.0]
        assert list(fig.data[1].y) == [0.5, None, 0.25]
    assert fig.data[0].type == "scatter" and sql_figure(ANSWER, "bar", "day", ["runs"]).data[0].type == "bar"


def test_colour_splits_one_y_column_by_value_and_names_stay_text() -> None:
    fig = sql_figure(ANSWER, "line", "day", ["runs"], color="agent")
    by_name = {t.name: (list(t.x), list(t.y)) for t in fig.data}
    assert by_name == {
        "refund": (["2025-03-01T00:00:00Z", "2025-03-02T00:00:00Z"], [3.0, 4.0]),
        "&lt;b&gt;x&lt;/b&gt;": (["2025-03-01T00:00:00Z"], [1.0]),
    }


def test_nothing_to_draw_is_a_figure_that_says_so() -> None:
    for answer, x, ys in ((SqlAnswer(), "day", ["runs"]), (ANSWER, "nope", ["runs"]), (ANSWER, "day", []),
                          (ANSWER, "day", ["missing"])):
        fig = sql_figure(answer, "bar", x, ys)
        assert not fig.data and "nothing to draw" in fig.layout.annotations[0].text
