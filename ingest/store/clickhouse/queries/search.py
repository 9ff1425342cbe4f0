"""ClickHouse form of `ingest.queries.search`, and ClickHouse's full-text search itself: the query
grammar's ClickHouse target, BM25 ranking and highlighted snippets, all in ClickHouse SQL over
`search_docs` (ingest/store/clickhouse/schema_search.py; design.md §4 "Full-text search").

How a search runs (`find`):
1. The words of the query (`ingest.search.index.query_words`, the one grammar of both stores) are
   tokenized by ClickHouse with the index's tokenizer and folding (`tokens_of`): each word is a
   phrase of one or more tokens (`tool-call` is tool, call), words without tokens are dropped.
2. The statistics BM25 needs come from the table: documents and tokens in all of it (count() and
   sum(doc_len)), and per phrase the documents holding it (`hasAllTokens`, answered from the text
   index's posting lists; a phrase of several tokens also needs them adjacent: `hasSubstr` on the
   document's tokens).
3. The matches in scope (every token in one document: `hasAllTokens` over the text index; each
   phrase's tokens adjacent; project, time range) are read newest-indexed first, at most
   `RANK_WINDOW` of them (as FTS5's side ranks only that many), scored with BM25 (k1 = 1.2,
   b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)), floored at 1e-6: FTS5's bm25() formula, so the
   same documents get the same scores on both stores) and the best `limit` get a snippet.

Reads of `search_docs` run with `final = 0`: the table only deduplicates (no versions, no
tombstones), so instead of FINAL each document key is taken once (`LIMIT 1 BY`) and the text index
serves the match; a duplicate not merged yet (two nodes racing) counts in the ranking statistics until
its merge. Snippets: the document is cut into runs of letters/digits and the rest (the tokenizer's
own pattern), the words whose folded form is a query token are marked with HIT_OPEN/HIT_CLOSE, and
SNIPPET_TOKENS words are kept around the marks, placed where they cover the most distinct query
words (as FTS5's snippet() places its window), with `…` where text was cut. Snippets are made in a
second statement for the ranked documents only (looked up by their key), in one subquery level per
step: written as one expression, ClickHouse's analyzer re-expands every alias inside the next and
one document's snippet took a second.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from ingest.filters.compile import Sql
from ingest.queries.filters import Where, project_clause
from ingest.search import index
from ingest.search.index import HIT_CLOSE, HIT_OPEN, Hit, from_us, query_words
from ingest.store.clickhouse.queries._common import dicts
from ingest.store.clickhouse.queries.spans import require_clickhouse
from ingest.store.clickhouse.schema_search import (
    SEPARATOR_PATTERN,
    WORD_PATTERN,
    normalized,
    sql_string,
    tokens_of,
)

K1, B = 1.2, 0.75  # FTS5's bm25() constants
IDF_FLOOR = 1e-6  # FTS5: a term in more than half the documents weighs this, never less than nothing

DOCS = "search_docs"
_NO_FINAL = " SETTINGS final = 0"

_FACTS = (
    "s.project AS project, s.trace_id AS trace_id, s.span_id AS span_id, s.name AS name, s.operation AS operation, "
    "s.agent_name AS agent_name, s.tool_name AS tool_name, s.model AS model, s.status AS status, "
    "s.error_type AS error_type, s.start_time AS start_time, s.duration_ms AS duration_ms"
)


def span_facts(cur: Any, hits: list[Hit], predicate: Sql | None) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(project, trace_id, span_id) -> the span's facts, for the hits whose span is stored and matches."""
    require_clickhouse(predicate)
    if not hits:
        return {}
    first: datetime = min(h.start_time for h in hits)
    last: datetime = max(h.start_time for h in hits)
    extra, params = ("", []) if predicate is None else (f" AND ({predicate.sql})", predicate.params)
    cur.execute(
        f"SELECT {_FACTS} FROM spans AS s FINAL WHERE s.start_time BETWEEN ? AND ? "
        f"AND (s.project, s.trace_id, s.span_id) IN (SELECT arrayJoin(arrayZip(?, ?, ?))){extra}",
        [first, last, [h.project for h in hits], [h.trace_id for h in hits], [h.span_id for h in hits], *params],
    )
    return {(r["project"], r["trace_id"], r["span_id"]): r for r in dicts(cur)}


def phrases(cur: Any, text: str) -> list[list[str]]:
    """The query's words as ClickHouse tokenizes them (one phrase per word; words without tokens dropped)."""
    words = query_words(text)
    if not words:
        return []
    cur.execute(f"SELECT arrayMap(w -> {tokens_of('w')}, ?)", [words])
    return [list(p) for p in cur.fetchall()[0][0] if p]


def _phrase_present(phrase: list[str], column: str = "text") -> tuple[str, list[Any]]:
    """The document `column` holds `phrase`: its tokens (from the text index), adjacent when several."""
    if len(phrase) == 1:
        return f"hasAllTokens({column}, ?)", [phrase]
    return f"hasAllTokens({column}, ?) AND hasSubstr({tokens_of(column)}, ?)", [phrase, phrase]


def _statistics(cur: Any, found: list[list[str]]) -> tuple[int, float, list[int]]:
    """(documents, tokens, documents holding each phrase) over the whole table, as FTS5 keeps them."""
    parts, params = [f"(SELECT count() FROM {DOCS})", f"(SELECT sum(doc_len) FROM {DOCS})"], []
    for phrase in found:
        condition, more = _phrase_present(phrase)
        parts.append(f"(SELECT count() FROM {DOCS} WHERE {condition})")
        params += more
    cur.execute(f"SELECT {', '.join(parts)}{_NO_FINAL}", params)
    row = cur.fetchall()[0]
    return int(row[0] or 0), float(row[1] or 0), [int(n or 0) for n in row[2:]]


def _idf(documents: int, holding: int) -> float:
    value = math.log((documents - holding + 0.5) / (holding + 0.5)) if documents else 0.0
    return value if value > 0 else IDF_FLOOR


def _frequency(phrase: list[str]) -> tuple[str, list[Any]]:
    """Occurrences of `phrase` in the document's tokens `dt`."""
    if len(phrase) == 1:
        return "countEqual(dt, ?)", [phrase[0]]
    return "arrayCount(i -> arraySlice(dt, i, ?) = ?, arrayEnumerate(dt))", [len(phrase), phrase]


def _snippet_levels(tokens: list[str]) -> tuple[list[list[str]], list[Any]]:
    """The snippet of `text` (see the module docstring) as levels of select lists, each level over the
    columns of the one before (a level per step, so ClickHouse never re-expands one step's expression
    inside the next), and its parameters. The steps: the pieces (words and separators), which are
    words, each piece's word number (a separator has the number of the word before it), which are
    marked; the marked words' numbers and folded text; per marked word as the window's first match,
    the last match the window covers and how many distinct query words it covers; the best window's
    first word; the snippet."""
    word = sql_string("^" + WORD_PATTERN[:-1])  # a piece that starts with a letter or digit is a word
    span = int(index.SNIPPET_TOKENS) - 1
    keep = (
        f"if(w, k BETWEEN w0 AND w0 + {span}, (k >= w0 AND k < w0 + {span}) OR (k = 0 AND w0 = 1) "
        f"OR (k = n_words AND w0 + {span} >= n_words))"
    )
    levels = [
        [
            f"extractAll(text, {sql_string(WORD_PATTERN + '|' + SEPARATOR_PATTERN)}) AS pieces",
            f"arrayMap(p -> match(p, {word}), pieces) AS is_word",
        ],
        [
            "arrayCumSum(arrayMap(x -> toInt64(x), is_word)) AS word_no",
            "toInt64(arraySum(is_word)) AS n_words",
            f"arrayMap((p, w) -> w AND has(?, {normalized('p')}), pieces, is_word) AS hit",
        ],
        [
            "arrayFilter((k, h) -> h, word_no, hit) AS hit_no",
            f"arrayMap(p -> {normalized('p')}, arrayFilter((p, h) -> h, pieces, hit)) AS hit_text",
        ],
        [f"arrayMap(c -> (c, arrayMax(arrayFilter(k -> k BETWEEN c AND c + {span}, hit_no))), hit_no) AS covered"],
        [
            "arrayMap(x -> length(arrayDistinct(arrayFilter((t, k) -> k BETWEEN x.1 AND x.2, hit_text, hit_no))), "
            "covered) AS coverage",
        ],
        ["if(empty(covered), (toInt64(1), toInt64(1)), covered[indexOf(coverage, arrayMax(coverage))]) AS best"],
        [f"greatest(1, least(toInt64(best.1) - intDiv({span} - toInt64(best.2 - best.1), 2), n_words - {span})) AS w0"],
        [
            f"concat(if(w0 > 1, '…', ''), arrayStringConcat(arrayMap((p, h) -> if(h, concat(?, p, ?), p), "
            f"arrayFilter((p, k, w) -> {keep}, pieces, word_no, is_word), "
            f"arrayFilter((h, k, w) -> {keep}, hit, word_no, is_word))), if(w0 + {span} < n_words, '…', '')) AS snippet",
        ],
    ]
    return levels, [tokens, HIT_OPEN, HIT_CLOSE]


def find(
    cur: Any,
    text: str,
    projects: frozenset[str] | None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    snippets: bool = True,
) -> list[Hit]:
    """The best-ranked documents holding every word of `text` among readable `projects` (None: all;
    empty: nothing), spans starting in [since, until): `SearchIndex.search`'s answer, from ClickHouse."""
    if projects is not None and not projects:
        return []
    found = phrases(cur, text)
    if not found:
        return []
    documents, tokens, holding = _statistics(cur, found)
    if not documents:
        return []
    average = tokens / documents or 1.0
    where = Where()
    where.add("hasAllTokens(text, ?)", sorted({t for p in found for t in p}))
    for phrase in found:
        if len(phrase) > 1:
            where.add(f"hasSubstr({tokens_of('text')}, ?)", phrase)
    project_clause(where, projects)
    if since is not None:
        where.add("start_time >= ?", since)
    if until is not None:
        where.add("start_time < ?", until)
    terms, score_params = [], []
    for phrase, n in zip(found, holding, strict=True):
        frequency, params = _frequency(phrase)
        terms.append(f"? * ({frequency}) * {K1 + 1} / (({frequency}) + {K1} * ({1 - B} + {B} * doc_len / ?))")
        score_params += [_idf(documents, n), *params, *params, average]
    window = max(limit, int(index.RANK_WINDOW))
    # innermost the window of matches, then only its documents are tokenized and scored
    cur.execute(
        f"""
        SELECT project, trace_id, span_id, start_time, field, score
        FROM (
          SELECT project, trace_id, span_id, start_time, field, {tokens_of('text')} AS dt, {' + '.join(terms)} AS score
          FROM (
            SELECT project, trace_id, span_id, start_time, field, text, doc_len
            FROM {DOCS} WHERE {where.sql()}
            ORDER BY indexed_at DESC, project, trace_id, span_id, field
            LIMIT 1 BY project, trace_id, span_id, field LIMIT ?
          )
        )
        ORDER BY score DESC, start_time DESC, project, trace_id, span_id, field LIMIT ?{_NO_FINAL}""",
        [*score_params, *where.params, window, limit],
    )
    ranked = cur.fetchall()
    marked = _snippets(cur, ranked, sorted({t for p in found for t in p})) if snippets and ranked else {}
    return [Hit(r[0], r[1], r[2], r[3], r[4], float(r[5]), marked.get((r[0], r[1], r[2], r[4]), "")) for r in ranked]


def _snippets(cur: Any, ranked: list[tuple], tokens: list[str]) -> dict[tuple[str, str, str, str], str]:
    """(project, trace_id, span_id, field) -> snippet, for the ranked documents only (found by their
    key, the table's ordering key)."""
    levels, params = _snippet_levels(tokens)
    keys = [[r[i] for r in ranked] for i in (0, 1, 2, 4)]
    sql = (
        f"SELECT project, trace_id, span_id, field, text FROM {DOCS} "
        "WHERE (project, trace_id, span_id, field) IN (SELECT arrayJoin(arrayZip(?, ?, ?, ?))) "
        "LIMIT 1 BY project, trace_id, span_id, field"
    )
    for columns in levels:
        sql = f"SELECT *, {', '.join(columns)} FROM ({sql})"
    # placeholders in text order: the outermost level's (open, close marks) come first, the keys last
    cur.execute(
        f"SELECT project, trace_id, span_id, field, snippet FROM ({sql}){_NO_FINAL}",
        [params[1], params[2], params[0], *keys],
    )
    return {(r[0], r[1], r[2], r[3]): r[4] for r in cur.fetchall()}


# Each key's newest row (a cleared key's newest value is NULL), by argMax rather than FINAL: on a
# cluster a key's rows may sit on different shards, and FINAL only merges within one.
META_LATEST = (
    "SELECT key, argMax(tuple(value), updated_at).1 AS latest, max(updated_at) AS latest_at "
    "FROM search_meta GROUP BY key HAVING latest IS NOT NULL"
)


def meta(cur: Any) -> dict[str, str]:
    """The index's bookkeeping (rebuild progress, when it was built), the keys FTS5's side keeps."""
    cur.execute(f"SELECT key, latest FROM ({META_LATEST})")
    return {k: v for k, v in cur.fetchall()}


def documents(cur: Any) -> int:
    """Documents in the whole index, exact (each document key once)."""
    cur.execute(f"SELECT count() FROM {DOCS} FINAL")
    return int(cur.fetchall()[0][0])


def lag(cur: Any, projects: frozenset[str] | None) -> tuple[int, datetime | None]:
    """(spans waiting, ingest time of the oldest) among readable projects. The load writes a span's
    documents before the span, so outside a rebuild no stored span waits; during one, the spans
    from the rebuild's position on wait (their documents are being written again)."""
    position = meta(cur).get("rebuild_next_us")
    if position is None:
        return 0, None
    where = Where()
    project_clause(where, projects)
    where.add("start_time >= ?", from_us(int(position)))
    cur.execute(f"SELECT count(), min(ingested_at) FROM spans FINAL WHERE {where.sql()}", where.params)
    count, oldest = cur.fetchall()[0]
    return int(count), (oldest if count else None)
