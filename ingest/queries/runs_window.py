"""Reading one sorted page of runs without sorting the runs table.

Why: `ORDER BY COALESCE(key, sentinel), trace_id, project LIMIT n` is a multi-key Top-N over an
expression, which DuckDB answers by reading every column of every matching run (at 287,000 runs:
~55 ms of CPU, 75 ms through the API). The bare column's Top-N (`ORDER BY key LIMIT n`) is answered
from the key column alone, and for `start_time`, which rows are appended in, from the newest row
group or two (zone maps plus DuckDB's Top-N dynamic filter). So a page is read in two steps:

1. the n largest (smallest) values of the bare key column under the page's filters, whose last one
   is the threshold;
2. the page's own statement, unchanged, plus `key >= threshold` (`<=` ascending), a bare-column
   predicate: DuckDB pushes the threshold into the scan as a dynamic filter and its zone maps skip
   every other row group, so only the window's rows are read in full.

Both are one statement (a CTE joined on the threshold), so they read one snapshot and the page costs
one round trip, which under load also means one GIL hand-off instead of several.

Why the answer is the same: every run outside the window has a key below the threshold (or NULL,
which sorts as the sentinel, below it), and the window holds at least n runs, so the page's top n
lie inside it and step 2 orders them exactly as before. When that argument does not hold (a NULL or
sentinel-valued key among the first n, where NULL and a real sentinel value tie; or nothing in the
window), the statement runs without the window, as it always did.

With a filter expression (ingest/filters) the threshold statement would evaluate it a second time
(span-level terms join the spans table), so those pages run one statement ordered by the bare column
with explicit NULL placement, checked the same way.

Why a remembered threshold (newest first): the threshold's Top-N and the statement around it cost
about half the page (the key column's Top-N over its row group, and planning a CTE, an aggregate and
a join). The same page is asked for again and again (a dashboard's refresh, a client's poll), and
any value with at least n matching runs at or above it bounds the page just as well as the exact
one. So each full page remembers its n-th key per (sort column, filters, n), and the next call runs
the page's statement with `key >= remembered` only; when that returns n rows, at least n runs lie at
or above it, so, as above, the page's top n are all inside it. When it returns fewer (runs deleted,
a hint from another store) the page is read through the exact threshold as before. The hint is only
ever a guess that the answer itself confirms, so a wrong one costs time, never a different page.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from ingest.queries.filters import Where


@dataclass(frozen=True)
class SortKey:
    """A sortable runs column and the sentinel its NULLs sort as (below every real value)."""

    column: str
    sentinel_sql: str
    sentinel: datetime | float | int

    @property
    def expression(self) -> str:
        """The total sort key: NULL replaced by the sentinel (what cursors carry and compare)."""
        return f"COALESCE({self.column}, {self.sentinel_sql})"


def read_page(
    cur: duckdb.DuckDBPyConnection, select: str, key: SortKey, order: str, where: Where, n: int, *, window: bool
) -> list[dict[str, Any]]:
    """Up to `n` rows of `SELECT {select}, <key> AS _sort_key FROM runs WHERE {where}` in (key, trace_id,
    project) order (`order` "desc" or "asc"), as dicts. `window=False` when `where` is costly to evaluate twice."""
    hint = _HINTS.key(key, where, n) if window and order == "desc" else None
    if hint is not None:
        rows = _hinted(cur, select, key, where, n, _HINTS.get(hint))
        if rows is not None:
            _HINTS.remember(hint, key, rows, n)
            return rows
    rows = _windowed(cur, select, key, order, where, n) if window else _bare_order(cur, select, key, order, where, n)
    if rows is None:
        rows = _statement(cur, select, key, order, where, n, order_by=key.expression)
    if hint is not None:
        _HINTS.remember(hint, key, rows, n)
    return rows


class _Thresholds:
    """The n-th key of the latest full newest-first page per (sort column, filters, n): a guess for the next
    page's threshold, which `_hinted` confirms or drops (module doc). Bounded; shared by every thread."""

    MAX_ENTRIES = 512

    def __init__(self) -> None:
        self._values: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(key: SortKey, where: Where, n: int) -> Hashable | None:
        """The hint's key, or None when a parameter cannot be one (unhashable): such pages go without."""
        entry = (key.column, where.sql(), tuple(where.params), n)
        try:
            hash(entry)
        except TypeError:
            return None
        return entry

    def get(self, entry: Hashable) -> Any:
        with self._lock:
            return self._values.get(entry)

    def remember(self, entry: Hashable, key: SortKey, rows: list[dict[str, Any]], n: int) -> None:
        """Keep the n-th key of a full page (a shorter page, or a NULL/sentinel n-th key, bounds nothing)."""
        value = rows[-1]["_sort_key"] if len(rows) == n else None
        with self._lock:
            if value is None or not value > key.sentinel:
                self._values.pop(entry, None)
                return
            self._values[entry] = value
            self._values.move_to_end(entry)
            while len(self._values) > self.MAX_ENTRIES:
                self._values.popitem(last=False)


_HINTS = _Thresholds()


def _hinted(
    cur: duckdb.DuckDBPyConnection, select: str, key: SortKey, where: Where, n: int, threshold: Any
) -> list[dict[str, Any]] | None:
    """The newest-first page bounded by a remembered threshold, or None when there is none or it does not
    bound the page (fewer than n matching runs at or above it: a longer read shows at least n). The threshold is above the sentinel (kept
    only so), so every run outside the window sorts below every run inside it."""
    if threshold is None:
        return None
    rows = _fetch(
        cur,
        f"SELECT {select}, {key.expression} AS _sort_key FROM runs WHERE ({where.sql()}) AND {key.column} >= ? "
        f"ORDER BY _sort_key DESC, trace_id DESC, project DESC LIMIT ?",
        [*where.params, threshold, max(n, _LATE_MATERIALIZATION_ROWS + 1)],
    )
    return rows[:n] if len(rows) >= n else None


# DuckDB's `late_materialization_max_rows` default: a Top-N of at most this many rows over a table is
# planned as a Top-N of row ids joined back to the table, which reads the window twice (+1 ms for a page
# of 1 at 287,000 runs). The window holds few rows, so a small page asks for one more than this and
# keeps its first n: the same rows, read once.
_LATE_MATERIALIZATION_ROWS = 50


def _direction(order: str) -> tuple[str, str]:
    # NULLs where the sentinel puts them: last when descending, first when ascending
    return ("DESC", "NULLS LAST") if order == "desc" else ("ASC", "NULLS FIRST")


def _fetch(cur: duckdb.DuckDBPyConnection, sql: str, params: list[object]) -> list[dict[str, Any]]:
    cur.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _statement(
    cur: duckdb.DuckDBPyConnection, select: str, key: SortKey, order: str, where: Where, n: int, *, order_by: str
) -> list[dict[str, Any]]:
    direction, nulls = _direction(order)
    placement = "" if order_by == key.expression else f" {nulls}"
    return _fetch(
        cur,
        f"SELECT {select}, {key.expression} AS _sort_key FROM runs WHERE {where.sql()} "
        f"ORDER BY {order_by} {direction}{placement}, trace_id {direction}, project {direction} LIMIT ?",
        [*where.params, n],
    )


_WINDOW_FACTS = ("_top_rows", "_top_keys", "_top_low", "_threshold")


def _windowed(
    cur: duckdb.DuckDBPyConnection, select: str, key: SortKey, order: str, where: Where, n: int
) -> list[dict[str, Any]] | None:
    """The page through the threshold window, or None when the window cannot prove the same answer."""
    direction, nulls = _direction(order)
    threshold, cmp = ("min", ">=") if order == "desc" else ("max", "<=")
    rows = _fetch(
        cur,
        f"WITH top AS (SELECT {key.column} AS v FROM runs WHERE {where.sql()} "
        f"ORDER BY {key.column} {direction} {nulls} LIMIT ?), "
        f"bound AS (SELECT count(*) AS _top_rows, count(v) AS _top_keys, min(v) AS _top_low, "
        f"{threshold}(v) AS _threshold FROM top) "
        f"SELECT {select}, {key.expression} AS _sort_key, bound.* FROM runs, bound "
        f"WHERE ({where.sql()}) AND runs.{key.column} {cmp} bound._threshold "
        f"ORDER BY _sort_key {direction}, trace_id {direction}, project {direction} LIMIT ?",
        [*where.params, n, *where.params, n],
    )
    if not rows:  # nothing matches, or every key of the top is NULL: the statement tells which
        return None
    facts = rows[0]
    if facts["_top_keys"] != facts["_top_rows"] or facts["_top_low"] <= key.sentinel or len(rows) < facts["_top_rows"]:
        return None
    for r in rows:
        for name in _WINDOW_FACTS:
            del r[name]
    return rows


def _bare_order(
    cur: duckdb.DuckDBPyConnection, select: str, key: SortKey, order: str, where: Where, n: int
) -> list[dict[str, Any]] | None:
    """The page ordered by the bare column, or None when a NULL or sentinel-valued key makes that order differ."""
    rows = _statement(cur, select, key, order, where, n, order_by=key.column)
    if any(r["_sort_key"] <= key.sentinel for r in rows):
        return None
    return rows
