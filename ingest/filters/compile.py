"""Compiling a filter AST (ingest/filters/ast.py) into a parameterized SQL predicate.

Only column names from ingest/filters/fields.py become SQL text; every value, every attribute key and
every search hit reaches DuckDB as a parameter or a registered table, so no filter can change the
statement's shape. The predicate is ANDed into a query that already restricts to the caller's projects.

Run-level semantics (design.md §4 "Filter expressions"): on /api/runs a bare column of the runs table
is the run's; attribute keys, `span.<column>`, span-only columns and `search()` are span-level terms.
A maximal and/or group of span-level terms is tested on ONE span of the run's trace (`EXISTS`), so
`attributes["gen_ai.tool.name"] = "refund" and attributes["amount"] > 500` means one refund call
over 500; `not` is applied at run level (`not tool_name = "x"`: no span of the trace is a call of x).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from ingest.filters import ast
from ingest.filters.dialect import DIALECTS, DialectName
from ingest.filters.fields import PROMOTED_ATTRIBUTES, RUN_COLUMNS, SPAN_COLUMNS, Kind
from ingest.filters.parse import FilterError
from ingest.filters.prefilter import raw_needle, raw_pattern

_SQL_OPS = {"=": "=", "!=": "<>", ">": ">", ">=": ">=", "<": "<", "<=": "<="}
_ORDERING = {">", ">=", "<", "<="}


@dataclass(frozen=True)
class SearchHits:
    """Spans a `search()` term matched: a table registered on the query's cursor with columns
    (project, trace_id, span_id, start_time), and the range of their start times (zone-map pruning)."""

    table: str
    first: datetime
    last: datetime
    # (projects, trace ids, span ids) of the hits, for a backend without registered tables (ClickHouse)
    keys: tuple[list[str], list[str], list[str]] | None = None


# `search("text")` → its hits, or None when nothing matched (the term is then FALSE).
SearchResolver = Callable[[str], SearchHits | None]


@dataclass
class Sql:
    sql: str
    params: list[object]
    dialect: DialectName = "duckdb"  # the store whose SQL this is (a query refuses the other's)


class _Compiler:
    def __init__(
        self, text: str, resolve: SearchResolver | None, prefilter: bool = True, dialect: DialectName = "duckdb"
    ) -> None:
        self.text = text
        self.resolve = resolve
        self.prefilter = prefilter
        self.d = DIALECTS[dialect]

    def error(self, message: str, pos: ast.Pos) -> FilterError:
        return FilterError(message, self.text, pos.line, pos.column)

    # ---- span-level --------------------------------------------------------------------------

    def span(self, node: ast.Node, alias: str) -> Sql:
        if isinstance(node, ast.And | ast.Or):
            parts = [self.span(item, alias) for item in node.items]
            joiner = " AND " if isinstance(node, ast.And) else " OR "
            return Sql(joiner.join(f"({p.sql})" for p in parts), [x for p in parts for x in p.params])
        if isinstance(node, ast.Not):
            inner = self.span(node.item, alias)
            return Sql(f"NOT coalesce(({inner.sql}), FALSE)", inner.params)
        if isinstance(node, ast.Search):
            return self.search(node, alias)
        field = node.field
        if isinstance(field, ast.Attribute):
            return self.attribute_term(node, alias)
        if field.name not in SPAN_COLUMNS:
            hint = " (a run column: use it on /api/runs)" if field.name in RUN_COLUMNS else ""
            raise self.error(f"unknown span column {field.name!r}{hint}; span columns: {', '.join(SPAN_COLUMNS)}",
                             field.pos)
        return self.column_term(node, f"{alias}.{field.name}", SPAN_COLUMNS[field.name], field.name)

    def search(self, node: ast.Search, alias: str) -> Sql:
        if self.resolve is None:
            raise self.error("search() is not available here", node.pos)
        hits = self.resolve(node.text)
        if hits is None:
            return Sql("FALSE", [])
        member, params = self.d.span_in_hits(alias, hits)
        return Sql(f"{alias}.start_time BETWEEN ? AND ? AND {member}", [hits.first, hits.last, *params])

    def attribute_term(self, node: ast.Term, alias: str) -> Sql:
        """The exact JSON test, behind the raw-text pre-filter of ingest/filters/prefilter.py."""
        exact = self.exact_attribute_term(node, alias)
        if not self.prefilter:
            return exact
        field = node.field
        assert isinstance(field, ast.Attribute)
        values: tuple[ast.Literal, ...] = ()
        if isinstance(node, ast.Contains) or (isinstance(node, ast.Compare) and node.op == "="):
            values = (node.value,)
        elif isinstance(node, ast.In):
            values = node.values
        texts = [v.value for v in values]
        strings = bool(texts) and all(isinstance(t, str) for t in texts)
        column = PROMOTED_ATTRIBUTES.get(field.key)
        if column is not None and not isinstance(node, ast.Contains) and strings and all(_plain_string(str(t)) for t in texts):
            marks = ", ".join("?" for _ in texts)
            return Sql(f"{alias}.{column} IN ({marks}) AND ({exact.sql})", [*texts, *exact.params])
        # A value narrows the pattern only where the term needs the value's text (=, in, contains on
        # strings); any other term (numbers, !=, <, exists) still needs the key to be present.
        wanted: list[str | None] = [str(t) for t in texts] if strings else [None]
        pairs = sorted({(raw_needle(field.key, t), raw_pattern(field.key, t)) for t in wanted}, key=str)
        raw = self.d.raw_text(f"{alias}.attributes")
        if any(pattern is None for _, pattern in pairs):
            return exact
        if isinstance(node, ast.Contains):  # case-insensitive like the exact test: no contains() needle
            pre = Sql(self.d.ilike(raw), [pairs[0][1]])
        else:
            pre = Sql(" OR ".join(f"({self.d.has_substring(raw)} AND {self.d.like(raw)})" for _ in pairs),
                      [x for pair in pairs for x in pair])
        return Sql(f"({pre.sql}) AND ({exact.sql})", [*pre.params, *exact.params])

    def exact_attribute_term(self, node: ast.Term, alias: str) -> Sql:
        field = node.field
        assert isinstance(field, ast.Attribute)
        attributes = f"{alias}.attributes"
        if isinstance(node, ast.Exists):
            return Sql(*self.d.attribute_exists(attributes, field.key))
        text, path = self.d.attribute_text(attributes, field.key)
        if isinstance(node, ast.Contains):
            return Sql(self.d.ilike(text), [*path, _like(self.string(node.value))])
        values = node.values if isinstance(node, ast.In) else (node.value,)
        kind = self.literal_kind(values)
        expr = {Kind.NUMBER: self.d.to_number(text), Kind.BOOL: self.d.to_bool(text)}.get(kind, text)
        if isinstance(node, ast.In):
            marks = ", ".join("?" for _ in values)
            return Sql(f"{expr} IN ({marks})", [*path, *(v.value for v in values)])
        assert isinstance(node, ast.Compare)
        if kind is Kind.BOOL and node.op in _ORDERING:
            raise self.error(f"true/false compare with = or !=, not {node.op}", node.value.pos)
        return Sql(f"{expr} {_SQL_OPS[node.op]} ?", [*path, node.value.value])

    def literal_kind(self, values: tuple[ast.Literal, ...]) -> Kind:
        """Numbers compare as numbers, strings as text, true/false as booleans; a list must be of one kind."""
        kinds = [_kind_of(v) for v in values]
        for v, k in zip(values, kinds, strict=True):
            if k is not kinds[0]:
                raise self.error(f"mixed values in `in (...)`: {k.value} among {kinds[0].value}s", v.pos)
        return kinds[0]

    def column_term(self, node: ast.Term, expr: str, kind: Kind, name: str) -> Sql:
        if isinstance(node, ast.Exists):
            return Sql(f"{expr} IS NOT NULL", [])
        if isinstance(node, ast.Contains):
            value = self.string(node.value)
            if kind is Kind.LIST:
                return Sql(self.d.ilike(self.d.list_text(expr)), [_like(value)])
            if kind is not Kind.TEXT:
                raise self.error(f"{name} is a {kind.value} column: `contains` needs a text column", node.value.pos)
            return Sql(self.d.ilike(expr), [_like(value)])
        values = node.values if isinstance(node, ast.In) else (node.value,)
        params = [self.typed(v, kind, name) for v in values]
        if kind is Kind.LIST:
            if isinstance(node, ast.In):
                return Sql(" OR ".join(self.d.list_has(expr) for _ in params), params)
            if node.op not in {"=", "!="}:
                raise self.error(f"{name} is a list: compare it with = or !=", node.value.pos)
            negate = "NOT " if node.op == "!=" else ""
            return Sql(f"{negate}coalesce({self.d.list_has(expr)}, FALSE)", params)
        if isinstance(node, ast.In):
            return Sql(f"{expr} IN ({', '.join('?' for _ in params)})", params)
        if kind is Kind.BOOL and node.op in _ORDERING:
            raise self.error(f"{name} is true/false: compare it with = or !=", node.value.pos)
        return Sql(f"{expr} {_SQL_OPS[node.op]} ?", params)

    def typed(self, lit: ast.Literal, kind: Kind, name: str) -> object:
        """The literal as a parameter of the column's type, or a refusal pointing at it."""
        got = _kind_of(lit)
        if kind in {Kind.TEXT, Kind.LIST}:
            if got is not Kind.TEXT:
                raise self.error(f"{name} is text: quote the value", lit.pos)
            return lit.value
        if kind is Kind.TIME:
            if got is not Kind.TEXT:
                raise self.error(f"{name} is a time: give it as a quoted ISO 8601 string", lit.pos)
            return self.time(lit, name)
        if got is not kind:
            raise self.error(f"{name} is a {kind.value} column: compare it with a {kind.value}", lit.pos)
        return lit.value

    def time(self, lit: ast.Literal, name: str) -> datetime:
        text = str(lit.value).strip().replace("Z", "+00:00")
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise self.error(f"{name} needs an ISO 8601 time like \"2025-01-31T12:00:00Z\"", lit.pos) from None
        if dt.tzinfo is not None:
            dt = dt.astimezone(UTC).replace(tzinfo=None)
        return dt

    def string(self, lit: ast.Literal) -> str:
        if not isinstance(lit.value, str) or isinstance(lit.value, bool):
            raise self.error("`contains` takes a quoted string", lit.pos)
        return lit.value

    # ---- run-level ---------------------------------------------------------------------------

    def run(self, node: ast.Node, span_since: datetime | None) -> Sql:
        if self.span_only(node) and not isinstance(node, ast.Not):
            inner = self.span(node, "s")
            bound, params = "", []
            if span_since is not None:
                bound, params = " AND s.start_time >= ?", [span_since]
            return Sql(self.d.run_has_span(bound, inner.sql), [*params, *inner.params])
        if isinstance(node, ast.And | ast.Or):
            parts = [self.run(item, span_since) for item in node.items]
            joiner = " AND " if isinstance(node, ast.And) else " OR "
            return Sql(joiner.join(f"({p.sql})" for p in parts), [x for p in parts for x in p.params])
        if isinstance(node, ast.Not):
            inner = self.run(node.item, span_since)
            return Sql(f"NOT coalesce(({inner.sql}), FALSE)", inner.params)
        assert not isinstance(node, ast.Search)
        field = node.field
        assert isinstance(field, ast.Column) and not field.span
        return self.column_term(node, f"runs.{field.name}", RUN_COLUMNS[field.name], field.name)

    def span_only(self, node: ast.Node) -> bool:
        """True when every term under `node` is span-level (checked without recursion)."""
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, ast.And | ast.Or):
                stack.extend(n.items)
            elif isinstance(n, ast.Not):
                stack.append(n.item)
            elif not isinstance(n, ast.Search) and not self.span_field(n.field):
                return False
        return True

    def span_field(self, field: ast.Field) -> bool:
        if isinstance(field, ast.Attribute) or field.span:
            return True
        if field.name in RUN_COLUMNS:
            return False
        if field.name in SPAN_COLUMNS:
            return True
        raise self.error(
            f"unknown column {field.name!r}; run columns: {', '.join(RUN_COLUMNS)}; span columns (or span.<name>): "
            f"{', '.join(c for c in SPAN_COLUMNS if c not in RUN_COLUMNS)}",
            field.pos,
        )


def _kind_of(lit: ast.Literal) -> Kind:
    if isinstance(lit.value, bool):
        return Kind.BOOL
    if isinstance(lit.value, float):
        return Kind.NUMBER
    return Kind.TEXT


def _plain_string(value: str) -> bool:
    """True when a span's attribute can render as `value` only by being that very string: not empty
    (normalization skips an empty one), not a number's, a boolean's, an object's or a list's text
    (DuckDB renders `5e2` as `500.0`, `true` as `true`; normalization would promote `True` instead).
    Only then does `attributes[key] = value` imply the promoted column holds `value`."""
    if not value or value in {"true", "false"} or value.lstrip()[:1] in {"{", "["}:
        return False
    try:
        float(value)
    except ValueError:
        return True
    return False


def _like(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def span_predicate(
    node: ast.Node, text: str, alias: str = "s", resolve: SearchResolver | None = None, prefilter: bool = True,
    dialect: DialectName = "duckdb",
) -> Sql:
    """SQL over spans row `alias` (a module constant of the caller) matching the filter. `prefilter=False`
    leaves out the cheap necessary conditions ahead of each attribute's JSON test (same rows, slower):
    the reference the benchmark and the tests compare with. `dialect`: the SQL of which store
    (`queries_of(store).backend`), the same meaning in both."""
    out = _Compiler(text, resolve, prefilter, dialect).span(node, alias)
    return Sql(out.sql, out.params, dialect)


def run_predicate(
    node: ast.Node, text: str, resolve: SearchResolver | None = None, span_since: datetime | None = None,
    dialect: DialectName = "duckdb",
) -> Sql:
    """SQL over the `runs` table (referenced as `runs`) matching the filter. `span_since` bounds the spans
    a span-level term reads (a run's spans start after it does), letting zone maps skip older ones."""
    out = _Compiler(text, resolve, dialect=dialect).run(node, span_since)
    return Sql(out.sql, out.params, dialect)
