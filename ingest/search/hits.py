"""`search("...")` inside a filter: the index's hits handed to DuckDB as a registered Arrow table
(to ClickHouse, which has no per-connection tables, as array parameters of the hits' keys).

Why a registered table and not an IN list of parameters: a term can match thousands of spans, and a
table joins in one hash join; the hits never become SQL text. The hits are the MAX_FILTER_HITS
best-ranked documents in the caller's projects and time range (design.md §4 "Full-text search").
"""

from __future__ import annotations

import contextlib
from datetime import datetime

import duckdb
import pyarrow as pa

from ingest.filters.compile import SearchHits
from ingest.search.index import SearchIndex

MAX_FILTER_HITS = 10_000


class HitTables:
    """A SearchResolver bound to one read cursor; `close()` unregisters what it registered."""

    def __init__(
        self, cur: duckdb.DuckDBPyConnection, index: SearchIndex, projects: frozenset[str] | None,
        since: datetime | None, until: datetime | None,
    ) -> None:
        self.cur, self.index, self.projects, self.since, self.until = cur, index, projects, since, until
        self.names: list[str] = []
        self.truncated = False  # some term had more matches than MAX_FILTER_HITS

    def __call__(self, text: str) -> SearchHits | None:
        hits = self.index.search(text, self.projects, self.since, self.until, limit=MAX_FILTER_HITS, snippets=False)
        if not hits:
            return None
        self.truncated = self.truncated or len(hits) >= MAX_FILTER_HITS
        first, last = min(h.start_time for h in hits), max(h.start_time for h in hits)
        keys = ([h.project for h in hits], [h.trace_id for h in hits], [h.span_id for h in hits])
        if not hasattr(self.cur, "register"):  # ClickHouse: the keys would travel as array parameters
            return SearchHits("", first, last, keys)
        name = f"search_hits_{len(self.names)}"
        table = pa.table({
            "project": keys[0], "trace_id": keys[1], "span_id": keys[2], "start_time": [h.start_time for h in hits],
        })  # fmt: skip
        self.cur.register(name, table)
        self.names.append(name)
        return SearchHits(name, first, last)

    def close(self) -> None:
        for name in self.names:
            with contextlib.suppress(duckdb.Error):  # an aborted read cannot unregister: the cursor goes anyway
                self.cur.unregister(name)
        self.names = []
