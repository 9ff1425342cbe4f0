"""ClickHouse tables of full-text search: the documents (`search_docs`) and the index's bookkeeping
(`search_meta`). See design.md §4 "Full-text search" for how they are written and read.

Why documents in ClickHouse and not the DuckDB store's SQLite sidecar: several stateless api and
ingest nodes share one ClickHouse, and every api node must answer a search the same; a file next to
one node cannot be that. The documents are the ones `ingest/search/content.py` extracts (one per
span and content field), written by the load path before their span (ingest/store/clickhouse/
search_load.py), so a stored span is always searchable.

Engines (why):
- `search_docs`: ReplacingMergeTree ordered by the document key (project, trace_id, span_id, field):
  a document written twice (a replay, two nodes racing, a rebuild overlapping live loads) is one
  row after a merge and one row to every read before it (the read cursor's `final = 1`). A `text`
  skip index (ClickHouse's inverted index) over `text` with the tokenizer and normalization below
  answers `hasAllTokens` from posting lists; `doc_len` (tokens in the document) is materialized at
  insert for BM25's length normalization; minmax on `start_time` prunes time ranges; TTL on
  `start_time` ages documents out with their spans.
- `search_meta`: a few keys (rebuild progress, when the index was built), ReplacingMergeTree(updated_at).

TOKENS is the one tokenization of the ClickHouse side: the index, the documents' lengths, the
query's words and the snippets all use it. It is FTS5's unicode61 with diacritics removed, spelled in
ClickHouse: runs of letters and digits are tokens, everything else separates, case and diacritics
are folded (`lowerUTF8(removeDiacriticsUTF8(...))`).
"""

from __future__ import annotations

from ingest.store.clickhouse.schema import Table, _columns, create_table

# A token: a run of Unicode letters and digits (the separator is its complement).
WORD_PATTERN = r"[\p{L}\p{N}]+"
SEPARATOR_PATTERN = r"[^\p{L}\p{N}]+"


def sql_string(text: str) -> str:
    """A constant of this module as a ClickHouse string literal (never for input: that is a parameter)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def normalized(expr: str) -> str:
    """`expr` with case and diacritics folded, as the index's preprocessor folds documents."""
    return f"lowerUTF8(removeDiacriticsUTF8({expr}))"


def tokens_of(expr: str) -> str:
    """The tokens of `expr` (an SQL String expression) as the index sees them."""
    return f"tokens({normalized(expr)}, 'splitByRegexp', {sql_string(SEPARATOR_PATTERN)})"


SEARCH_DOCS = Table(
    "search_docs",
    (
        *_columns("project str, trace_id str, span_id str, field str, start_time ts, text str, indexed_at ts"),
        ("doc_len", f"UInt32 MATERIALIZED length({tokens_of('text')})"),
    ),
    order_by=("project", "trace_id", "span_id", "field"),
    ttl_column="start_time",
    indexes=(
        f"INDEX text_idx text TYPE text(tokenizer = splitByRegexp({sql_string(SEPARATOR_PATTERN)}), "
        f"preprocessor = {normalized('text')})",
        "INDEX start_time_mm start_time TYPE minmax GRANULARITY 1",
    ),
    shard_key="cityHash64(trace_id)",
)

SEARCH_META = Table(
    "search_meta",
    _columns("key str, value str?, updated_at ts"),
    order_by=("key",),
    version="updated_at",
)

SEARCH_TABLES: tuple[Table, ...] = (SEARCH_DOCS, SEARCH_META)

# The columns an insert names (doc_len is computed by ClickHouse).
DOC_COLUMNS = ("project", "trace_id", "span_id", "field", "start_time", "text", "indexed_at")


def search_migration(database: str, cluster: str | None = None) -> list[str]:
    """The statements of the migration that adds full-text search."""
    statements: list[str] = []
    for table in SEARCH_TABLES:
        statements += create_table(table, database, cluster)
    return statements
