"""Every page `list_runs` reads through its threshold window equals the page of a full sort.

The page is read in two statements (ingest/queries/runs_window.py): the bare key column's top N, then
the page's statement bounded by that threshold. That is only right if no run outside the window could
belong on the page, which breaks exactly where the coalesced key and the bare column disagree: NULL
keys (sorted as the sentinel), real keys equal to the sentinel (tied with NULLs, then ordered by
trace id), and ties at the threshold. Runs with all of those, in several projects and modes, stored
in shuffled order across many row groups, are paged with a cursor in every sort and order, with and
without filters and a filter expression; each page must equal the same page of one full sort
(`ORDER BY COALESCE(key, sentinel), trace_id, project` over the whole table, what the query was
before), and the cursors must walk every run exactly once.

DuckDB only: DuckDB's two-statement threshold window (both stores:
tests/ingest/api/test_runs_paging_never_skips_or_duplicates.py).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import duckdb
import pytest

from ingest.filters.check import checked_filter
from ingest.filters.compile import run_predicate
from ingest.queries.runs import RUN_SELECT, SORT_KEYS, RunFilters, RunKey, list_runs, runs_where
from ingest.store.migrate import migrate

EPOCH = datetime(1970, 1, 1)
BASE = datetime(2026, 3, 1)
RUNS = 400
SORTS = list(SORT_KEYS)


def _value(rng: random.Random, sort: str, i: int) -> object:
    """A key with NULLs, sentinel-equal values and many ties."""
    roll = rng.random()
    if roll < 0.06:
        return None
    if roll < 0.09:
        return SORT_KEYS[sort].sentinel  # a real value equal to the sentinel (epoch start, -1 metric)
    if sort == "start_time":
        return BASE + timedelta(seconds=i // 3)  # three runs per second: ties
    if sort in ("duration_ms", "cost_usd"):
        return float(rng.choice([0.0, 0.5, 1.25, 2.0, 10.0, rng.uniform(0, 100)]))
    return rng.choice([0, 1, 2, 3, 5, 8, rng.randrange(1000)])


@pytest.fixture(scope="module")
def runs_db() -> duckdb.DuckDBPyConnection:
    rng = random.Random(19)
    conn = duckdb.connect()
    migrate(conn)
    rows = []
    for i in range(RUNS):
        values = {sort: _value(rng, sort, i) for sort in SORTS}
        rows.append((
            # runs of the same trace id in both projects (the last tie-breaker), else a random id
            ["alpha", "beta"][i % 2] if i < 2 else rng.choice(["alpha", "beta"]),
            "f" * 32 if i < 2 else f"{rng.getrandbits(128):032x}",
            rng.choice(["billing", "support"]), rng.choice([None, "live", "eval"]), rng.choice([None, True, False]),
            rng.choice([True, False]), values["start_time"], values["duration_ms"], values["cost_usd"],
            values["steps"], values["input_tokens"],
        ))  # fmt: skip
    rng.shuffle(rows)  # stored out of time order
    for chunk in range(0, len(rows), 100):  # one statement each: many small appends
        conn.executemany(
            "INSERT INTO runs (project, trace_id, agent, mode, is_run, ok, start_time, duration_ms, cost_usd, steps, "
            "input_tokens, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())",
            rows[chunk : chunk + 100],
        )
    return conn


def full_sort(conn: duckdb.DuckDBPyConnection, filters: RunFilters, sort: str, order: str, extra: object) -> list:
    """Every matching run in page order, by one full sort of the coalesced key (the query before the window)."""
    where = runs_where(filters)
    if extra is not None:
        where.add(extra.sql, *extra.params)  # type: ignore[attr-defined]
    direction = order.upper()
    key = SORT_KEYS[sort].expression
    cur = conn.execute(
        f"SELECT {RUN_SELECT} FROM runs WHERE {where.sql()} "
        f"ORDER BY {key} {direction}, trace_id {direction}, project {direction}",
        where.params,
    )
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


FILTERS = {
    "live (the default)": (RunFilters(), None),
    "every mode": (RunFilters(modes=None), None),
    "one project and agent": (RunFilters(projects=frozenset({"beta"}), agent="billing", modes=None), None),
    "a time range": (RunFilters(since=BASE + timedelta(seconds=30), until=BASE + timedelta(seconds=200)), None),
    "a filter expression": (RunFilters(modes=None), "ok = false"),
    "nothing matches": (RunFilters(agent="nobody"), None),
}


@pytest.mark.parametrize("name", list(FILTERS))
@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("sort", SORTS)
def test_every_page_equals_the_full_sort(runs_db, sort, order, name):
    filters, text = FILTERS[name]
    extra = None if text is None else run_predicate(checked_filter(text, "runs"), text)
    expected = full_sort(runs_db, filters, sort, order, extra)
    for limit in (7, 50):
        got: list = []
        after: RunKey | None = None
        while True:
            cur = runs_db.cursor()
            page = list_runs(cur, filters, sort=sort, order=order, limit=limit, after=after, extra=extra)  # type: ignore[arg-type]
            cur.close()
            assert page.rows == expected[len(got) : len(got) + limit], f"page {len(got) // limit} of limit {limit}"
            got.extend(page.rows)
            after = page.next_key
            if after is None:
                break
        assert len(got) == len(expected)


def test_a_page_inside_the_callers_transaction_leaves_it_open(runs_db):
    """A caller already in a transaction (the dataset builder) gets the same page, and its transaction stays open."""
    cur = runs_db.cursor()
    cur.begin()
    page = list_runs(cur, RunFilters(), limit=20)
    assert page.rows == full_sort(runs_db, RunFilters(), "start_time", "desc", None)[:20]
    cur.execute("SELECT 1").fetchall()
    cur.rollback()  # still the caller's own transaction
    cur.close()
