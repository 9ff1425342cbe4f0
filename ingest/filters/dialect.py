"""The SQL a filter compiles to, per storage backend: the same grammar and allow-list, two dialects.

Why here and not a second compiler: the parser, the type checks, the run/span semantics and the
error positions are the filter's meaning and must be one; only the spelling of a few expressions
differs between DuckDB and ClickHouse (JSON extraction, list membership, substring tests, how the
spans of a run and the hits of `search()` are joined). `ingest/filters/compile.py` asks its dialect
for each of them. Every fragment takes its values as `?` parameters; the only text spliced in is an
alias or column name from the compiler's allow-list (ingest/filters/fields.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ingest.filters.compile import SearchHits

DialectName = Literal["duckdb", "clickhouse"]


class DuckDBDialect:
    """DuckDB: JSON pointers into the attributes JSON, correlated EXISTS, registered hit tables."""

    name: DialectName = "duckdb"

    def attribute_key(self, key: str) -> str:
        """The parameter naming the attribute: a JSON pointer (a dotted key is one key, never a path)."""
        return "/" + key.replace("~", "~0").replace("/", "~1")

    def attribute_text(self, attributes: str, key: str) -> tuple[str, list[object]]:
        """The attribute's value as text (a string as itself, anything else as its JSON; NULL when absent
        or JSON null), with the key as parameters."""
        return f"json_extract_string({attributes}, ?)", [self.attribute_key(key)]

    def attribute_exists(self, attributes: str, key: str) -> tuple[str, list[object]]:
        return f"json_extract({attributes}, ?) IS NOT NULL", [self.attribute_key(key)]

    def to_number(self, text: str) -> str:
        return f"TRY_CAST({text} AS DOUBLE)"

    def to_bool(self, text: str) -> str:
        return f"TRY_CAST({text} AS BOOLEAN)"

    def ilike(self, expr: str) -> str:
        """`expr` matches a `?` LIKE pattern case-insensitively (escape character backslash)."""
        return f"{expr} ILIKE ? ESCAPE '\\'"

    def like(self, expr: str) -> str:
        return f"{expr} LIKE ? ESCAPE '\\'"

    def has_substring(self, expr: str) -> str:
        return f"contains({expr}, ?)"

    def raw_text(self, attributes: str) -> str:
        return f"{attributes}::VARCHAR"

    def list_text(self, expr: str) -> str:
        return f"array_to_string({expr}, chr(10))"

    def list_has(self, expr: str) -> str:
        return f"list_contains({expr}, ?)"

    def run_has_span(self, bound: str, inner: str) -> str:
        """The run (table `runs`) has a span `s` with `inner`; `bound` is an extra condition on `s`."""
        return (
            "EXISTS (SELECT 1 FROM spans s WHERE s.project = runs.project AND s.trace_id = runs.trace_id"
            f"{bound} AND ({inner}))"
        )

    def span_in_hits(self, alias: str, hits: SearchHits) -> tuple[str, list[object]]:
        """Span `alias` is one of the hits (the table registered on the cursor)."""
        sql = (
            f"EXISTS (SELECT 1 FROM {hits.table} h WHERE h.project = {alias}.project AND h.trace_id = "
            f"{alias}.trace_id AND h.span_id = {alias}.span_id)"
        )
        return sql, []


def json_text_clickhouse(document: str, key: str = "?") -> str:
    """ClickHouse SQL for DuckDB's `json_extract_string(document, key)` of a top-level key (`key`:
    SQL text, five times): a string unquoted; a double with a whole value as yyjson writes it back
    (`500.0`; ClickHouse's JSONExtractRaw gives `500`), other numbers, booleans, objects and lists as
    their JSON text; NULL when the key is absent or JSON null. Inside an object or list a whole
    double still reads `500` (its type is not known from the text)."""
    kind = f"JSONType({document}, {key})"
    return (
        f"multiIf({kind} = 'String', JSONExtractString({document}, {key}), "
        f"{kind} = 'Double', replaceRegexpOne(JSONExtractRaw({document}, {key}), '^(-?[0-9]+)$', '\\\\1.0'), "
        f"nullIf(nullIf(JSONExtractRaw({document}, {key}), ''), 'null'))"
    )


class ClickHouseDialect(DuckDBDialect):
    """ClickHouse: JSONExtract* by key, `has` for arrays, uncorrelated IN subqueries (a run's spans
    are found by the spans table's ordering key, not re-read per run), the hits as array parameters."""

    name: DialectName = "clickhouse"

    def attribute_key(self, key: str) -> str:
        return key  # JSONExtract* take keys, one per level: a dotted key is one key

    def attribute_text(self, attributes: str, key: str) -> tuple[str, list[object]]:
        # as DuckDB's json_extract_string: a string unquoted, a number/bool/object/list as its JSON
        # text, NULL when the key is absent (raw text '') or its value is JSON null; a whole double
        # (500.0, 5e2) as DuckDB writes it back, "500.0" (ClickHouse's raw text is "500")
        return json_text_clickhouse(attributes), [key] * 5

    def attribute_exists(self, attributes: str, key: str) -> tuple[str, list[object]]:
        return f"coalesce(JSONHas({attributes}, ?), FALSE)", [key]

    def to_number(self, text: str) -> str:
        return f"toFloat64OrNull({text})"

    def to_bool(self, text: str) -> str:
        return f"accurateCastOrNull({text}, 'Bool')"

    def ilike(self, expr: str) -> str:
        return f"{expr} ILIKE ?"  # backslash is ClickHouse's LIKE escape character already

    def like(self, expr: str) -> str:
        return f"{expr} LIKE ?"

    def has_substring(self, expr: str) -> str:
        return f"position({expr}, ?) > 0"

    def raw_text(self, attributes: str) -> str:
        return attributes  # stored as String: the JSON text as loaded

    def list_text(self, expr: str) -> str:
        return f"arrayStringConcat({expr}, '\\n')"

    def list_has(self, expr: str) -> str:
        return f"has({expr}, ?)"

    def run_has_span(self, bound: str, inner: str) -> str:
        return f"(runs.project, runs.trace_id) IN (SELECT s.project, s.trace_id FROM spans s WHERE TRUE{bound} AND ({inner}))"

    def span_in_hits(self, alias: str, hits: SearchHits) -> tuple[str, list[object]]:
        """Span `alias` is one of the hits: three array parameters (projects, trace ids, span ids)
        zipped, never SQL text (ClickHouse has no tables registered on a connection)."""
        if hits.keys is None:
            raise ValueError("search hits for ClickHouse must carry their keys (ingest/search/hits.py)")
        projects, traces, spans = hits.keys
        sql = f"({alias}.project, {alias}.trace_id, {alias}.span_id) IN (SELECT arrayJoin(arrayZip(?, ?, ?)))"
        return sql, [list(projects), list(traces), list(spans)]


DIALECTS: dict[str, DuckDBDialect] = {"duckdb": DuckDBDialect(), "clickhouse": ClickHouseDialect()}
