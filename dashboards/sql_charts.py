"""The SQL page's chart builder: a plotly figure from a query's answer, x and y picked by the user.

Why pure: like dashboards/charts.py, the figure is a function of the data, testable without a
browser; a choice the answer cannot draw (no rows, a y column that is not numeric) gives a figure
saying so instead of raising.
"""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go

from dashboards.sql_models import SqlAnswer

CHART_KINDS = ("bar", "line", "scatter", "area")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _label(value: Any) -> Any:
    """x values as plotly reads them: numbers and ISO times as they are, anything else as text."""
    if value is None:
        return "(null)"
    if isinstance(value, (int, float, str)):
        return value
    return str(value)


def _plain(value: str) -> str:
    """A name as plotly text: plotly reads a subset of HTML (`<a href>`, `<b>`), a column or value must not."""
    return html.escape(value, quote=False)


def _empty(message: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_layout(xaxis={"visible": False}, yaxis={"visible": False}, height=300)
    return fig


def sql_figure(answer: SqlAnswer, kind: str, x: str, ys: list[str], color: str | None = None) -> go.Figure:
    """One trace per y column (or per value of `color` when one y is drawn), in the answer's row order."""
    names = answer.names
    if not answer.rows or x not in names or not ys or any(y not in names for y in ys):
        return _empty("nothing to draw: run a query and pick an x and a y column")
    xi = names.index(x)
    groups: list[tuple[str, list[Any], list[float | None]]] = []
    if color and color in names and len(ys) == 1:
        ci, yi = names.index(color), names.index(ys[0])
        by: dict[str, tuple[list[Any], list[float | None]]] = {}
        for row in answer.rows:
            xs, vs = by.setdefault(str(_label(row[ci])), ([], []))
            xs.append(_label(row[xi]))
            vs.append(_number(row[yi]))
        groups = [(name, xs, vs) for name, (xs, vs) in by.items()]
    else:
        for y in ys:
            yi = names.index(y)
            groups.append((y, [_label(r[xi]) for r in answer.rows], [_number(r[yi]) for r in answer.rows]))
    fig = go.Figure()
    for name, xs, vs in groups:
        label = _plain(name)
        if kind == "bar":
            fig.add_trace(go.Bar(x=xs, y=vs, name=label))
        elif kind == "line":
            fig.add_trace(go.Scatter(x=xs, y=vs, name=label, mode="lines+markers"))
        elif kind == "area":
            fig.add_trace(go.Scatter(x=xs, y=vs, name=label, mode="lines", stackgroup="one"))
        else:
            fig.add_trace(go.Scatter(x=xs, y=vs, name=label, mode="markers"))
    fig.update_layout(
        barmode="group", height=420, margin={"t": 40},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "right", "x": 1},
        xaxis_title=_plain(x), yaxis_title=_plain(ys[0]) if len(ys) == 1 else None,
    )
    return fig
