"""`POST /api/sql` on the ClickHouse store: the checked, rewritten query rendered in ClickHouse SQL.

Why after the checks: the query is parsed, checked against the allow-lists and rewritten onto the
project-bound views once, in DuckDB's dialect (ingest/sql/check.py); only the accepted tree is
transpiled by sqlglot, so what a query may do is the same on both stores. The server's own CTEs
are written here in ClickHouse SQL (no `NOT MATERIALIZED`, ClickHouse inlines CTEs anyway).
Functions whose ClickHouse spelling would change the figure are mapped explicitly:
`quantile_cont`/`median` become `quantileExactInclusive` (DuckDB's interpolation, exact); a `CAST`
stays strict (sqlglot writes `CAST(x AS Nullable(T))`, which ClickHouse answers with NULL for a value
it cannot convert, i.e. DuckDB's TRY_CAST) and a TIMESTAMP keeps its microseconds.
"""

from __future__ import annotations

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ingest.filters.dialect import json_text_clickhouse
from ingest.sql.views import View

# View.condition (constant SQL) in ClickHouse's spelling: ClickHouse has no `IS NOT FALSE`.
_CONDITIONS = {"TRUE": "TRUE", "is_run IS NOT FALSE": "ifNull(is_run, true)"}


# A name means the column before a SELECT alias of the same name, as in DuckDB (`SELECT 'x' AS
# project ... WHERE project = ...` compares the column on both stores). A strict CAST relies on the
# CASE evaluating its cast only on non-NULL rows: short-circuit evaluation (the server default) is
# asked for explicitly, so a server configured without it cannot turn a NULL into an error.
SETTINGS = " SETTINGS prefer_column_name_to_alias = 1, short_circuit_function_evaluation = 'enable'"


class NotRenderable(ValueError):
    """The accepted query has no ClickHouse form sqlglot can write (a 400 naming it)."""


def _exact_quantiles(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.PercentileCont):
        return exp.ParameterizedAgg(
            this="quantileExactInclusive", expressions=[node.expression.copy()], params=[node.this.copy()]
        )
    if isinstance(node, exp.Median):
        return exp.ParameterizedAgg(
            this="quantileExactInclusive", expressions=[exp.Literal.number(0.5)], params=[node.this.copy()]
        )
    return node


# DuckDB's TIMESTAMP (and TIMESTAMPTZ) is microseconds; sqlglot writes ClickHouse's DateTime (seconds).
_TIMESTAMP = exp.DataType.build("DateTime64(6, 'UTC')", dialect="clickhouse")


def _strict_cast(node: exp.Expression) -> exp.Expression:
    """`CAST(x AS T)` as DuckDB means it: an error for a value that does not convert, NULL for NULL.
    ClickHouse's CASE evaluates the cast only on the rows whose x is not NULL (short-circuit), so the
    non-Nullable cast sees no NULL. `TRY_CAST` keeps sqlglot's Nullable(T) form (NULL on failure)."""
    if not isinstance(node, exp.Cast):
        return node
    to = node.to
    if to.is_type(exp.DType.TIMESTAMP, exp.DType.TIMESTAMPNTZ, exp.DType.TIMESTAMPTZ):
        to = _TIMESTAMP.copy()
    value = node.this.transform(_strict_cast)  # a replaced node's children are not visited again
    if isinstance(node, exp.TryCast) or isinstance(value, exp.Null):
        return exp.TryCast(this=value, to=to.copy())
    strict = to.copy()
    strict.set("nullable", False)
    return exp.If(
        this=exp.Is(this=value.copy(), expression=exp.Null()),
        true=exp.Null(),
        false=exp.Cast(this=exp.Anonymous(this="assumeNotNull", expressions=[value.copy()]), to=strict),
    )


def _json_text(node: exp.Expression) -> exp.Expression:
    """`x ->> '$.k'` as DuckDB means it: a string unquoted, any other value as its JSON text (a whole
    double as `500.0`), NULL when the key is absent or JSON null (ClickHouse's JSONExtractString
    gives '' for all three)."""
    if not isinstance(node, exp.JSONExtractScalar):
        return node
    rendered = node.sql(dialect="clickhouse")
    document = node.this.sql(dialect="clickhouse")
    head = f"JSONExtractString({document}, "
    if not rendered.startswith(head) or not rendered.endswith(")"):
        return node
    key = rendered[len(head):-1]
    return sqlglot.parse_one(json_text_clickhouse(document, key), read="clickhouse")


def render(statement: exp.Expression) -> str:
    """The checked, rewritten statement as ClickHouse SQL (`?` placeholders kept for the cursor)."""
    tree = statement.copy().transform(_exact_quantiles).transform(_strict_cast).transform(_json_text)
    for placeholder in tree.find_all(exp.Placeholder):
        placeholder.replace(exp.var("?"))
    try:
        return tree.sql(dialect="clickhouse", comments=False)
    except SqlglotError as exc:
        raise NotRenderable(f"the query cannot be rendered for ClickHouse: {exc}") from None


def view_cte(view: View, projects: frozenset[str] | None) -> tuple[str, list[object]]:
    """`<cte_name> AS (SELECT ... FROM <table> WHERE <condition> AND <project scope>)` and its parameters
    (None: every project; an empty set: no row), the ClickHouse form of `View.cte`."""
    where, params = [_CONDITIONS[view.condition]], []
    if projects is not None:
        ordered = sorted(projects)
        where.append(f"project IN ({', '.join('?' for _ in ordered)})" if ordered else "FALSE")
        params.extend(ordered)
    return f"{view.cte_name} AS (SELECT {', '.join(view.columns)} FROM {view.table} WHERE {' AND '.join(where)})", params


# The views' JSON columns (DuckDB type JSON; String on ClickHouse): answered as JSON, parsed.
JSON_COLUMNS = frozenset({"attributes", "events", "resource", "metadata", "agents"})


def duckdb_type(name: str, arrow_type: pa.DataType) -> str:
    """The DuckDB name of a ClickHouse answer column's type, so `columns` read the same from both
    stores (the JSON encoder parses the JSON ones)."""
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "JSON" if name in JSON_COLUMNS else "VARCHAR"
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return f"{duckdb_type(name, arrow_type.value_type)}[]"
    if pa.types.is_timestamp(arrow_type):
        return "TIMESTAMP"
    names = {
        pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INTEGER", pa.int64(): "BIGINT",
        pa.uint8(): "UTINYINT", pa.uint16(): "USMALLINT", pa.uint32(): "UINTEGER", pa.uint64(): "UBIGINT",
        pa.float32(): "FLOAT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN", pa.date32(): "DATE",
    }  # fmt: skip
    return names.get(arrow_type, str(arrow_type).upper())
