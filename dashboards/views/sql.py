"""SQL: an editor for one read-only SELECT over the views (runs, spans, tool_calls, scores), its answer as a
table, and a chart builder (chart type, x, y, colour) over it. The query and the chart live in the URL,
so a view can be shared; the server binds the views to the dashboards' key's project."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import streamlit as st

from dashboards.sql_charts import CHART_KINDS, sql_figure
from dashboards.sql_models import SqlAnswer, SqlCatalog
from dashboards.ui import client, guard, param, set_param

LIMITS = (100, 1000, 10_000, 100_000)
NONE = "(none)"


def _cell(value: Any) -> Any:
    """Table cells as plain values: lists and objects (attributes, events) as JSON text."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return value


def _csv(names: list[str], rows: list[list[Any]]) -> str:
    """The shown answer as CSV (no second query for the download)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(names)
    writer.writerows([["" if v is None else _cell(v) for v in row] for row in rows])
    return out.getvalue()


def _pick(name: str, options: list[str], default: str) -> int:
    value = param(name, default)
    return options.index(value) if value in options else (options.index(default) if default in options else 0)


st.title("SQL")
st.caption(
    "One read-only SELECT over the views `runs`, `spans`, `tool_calls` and `scores` (DuckDB SQL; only your key's "
    "project is visible). `attributes->>'$.\"key\"'` reads an attribute; the time range is the query's own WHERE."
)

catalog = SqlCatalog()
with guard():
    catalog = client().sql_catalog()  # the views, their columns and example queries, from the server
DEFAULT_QUERY = catalog.examples[0].sql if catalog.examples else ""

with st.expander("Views, columns and examples", icon=":material/table_view:"):
    if catalog.views:
        cols = st.columns(len(catalog.views))
        for col, view in zip(cols, catalog.views, strict=True):
            col.markdown(f"**{view.name}**")
            col.caption(view.doc)
            col.dataframe([{"column": c.name, "type": c.type} for c in view.columns], hide_index=True,
                          key=f"schema_{view.name}")
    for example in catalog.examples:
        st.markdown(f"**{example.title}**")
        st.code(example.sql, language="sql")

query = st.text_area("Query", value=param("q", DEFAULT_QUERY), height=160, key="sql_query",
                     help="Ctrl+Enter runs it. Refused: other tables, writes, files, settings, table functions.")
head = st.columns([1, 1, 4])
limit = head[0].selectbox("Most rows", LIMITS, index=_pick("limit", [str(n) for n in LIMITS], "1000"))
head[1].button("Run", icon=":material/play_arrow:", type="primary")
set_param("q", None if query.strip() == DEFAULT_QUERY else query)
set_param("limit", None if limit == 1000 else str(limit))

if not query.strip():
    st.info("Write a SELECT above.", icon=":material/info:")
    st.stop()

with guard():
    answer: SqlAnswer = client().sql(query, limit=limit)
    stats = st.columns(3)
    stats[0].metric("Rows", f"{answer.row_count:,}")
    stats[1].metric("Columns", f"{len(answer.columns):,}")
    if answer.truncated:
        stats[2].metric("Cut by", (answer.truncated_by or "").replace("_", " "))
        st.warning(f"The answer was cut at {answer.row_count:,} rows by the server's "
                   f"{(answer.truncated_by or 'limit').replace('_', ' ')}: aggregate, or add a LIMIT.")
    if answer.error:
        st.error(answer.error)
    names = answer.names
    table = [{name: _cell(v) for name, v in zip(names, row, strict=False)} for row in answer.rows]
    st.dataframe(table, hide_index=True, key="sql_result", column_order=names)
    st.download_button("Download CSV", _csv(names, answer.rows), file_name="steplens-sql.csv", mime="text/csv",
                       icon=":material/download:")

    st.subheader("Chart")
    if not names:
        st.stop()
    numeric = answer.numeric()
    builder = st.columns([1, 2, 3, 2])
    kinds = list(CHART_KINDS)
    kind = builder[0].selectbox("Chart", kinds, index=_pick("chart", kinds, "bar"))
    x = builder[1].selectbox("x", names, index=_pick("x", names, names[0]))
    y_default = [n for n in numeric if n != x][:1]
    y_param = [n for n in param("y").split(",") if n in numeric]
    ys = builder[2].multiselect("y", numeric, default=y_param or y_default)
    colours = [NONE, *[n for n in names if n not in (x, *ys)]]
    colour = builder[3].selectbox("Colour by", colours, index=_pick("color", colours, NONE),
                                  help="One line or bar group per value (with one y column).")
    for key, value, default in (("chart", kind, "bar"), ("x", x, names[0]), ("y", ",".join(ys), ",".join(y_default)),
                                ("color", colour, NONE)):
        set_param(key, None if value == default else value)
    if not numeric:
        st.info("The answer has no numeric column to draw: select a count, sum or average.", icon=":material/info:")
    else:
        st.plotly_chart(sql_figure(answer, kind, x, ys, None if colour == NONE else colour), key="sql_chart")
