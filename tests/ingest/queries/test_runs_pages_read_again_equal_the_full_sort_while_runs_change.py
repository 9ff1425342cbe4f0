"""A newest-first page read again through its remembered threshold equals the page of a full sort, whatever
changed in between.

The second read of a page runs the page's statement bounded by the n-th key of the first read
(ingest/queries/runs_window.py) and keeps it only if the answer itself proves the bound: at least n
matching runs at or above it. That is right only if nothing that changed between the reads can slip
past the bound: newer runs, runs tied with the remembered key (ordered by trace id and project), runs
with NULL or sentinel keys, runs deleted from the top of the page (then fewer than n remain above the
bound and the page must be read the exact way), and a remembered key that came from another database
altogether (all of whose runs are older, or newer). Each read is compared with one full sort of the
coalesced key over the whole table, and the test checks which way each read went, so both ways are
covered for every sort key and page size.
"""

from __future__ import annotations

import itertools
import random
import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

import ingest.queries.runs_window as runs_window
from ingest.queries.runs import RUN_SELECT, SORT_KEYS, RunFilters, list_runs, runs_where
from ingest.store.migrate import migrate

BASE = datetime(2026, 3, 1)
SORTS = list(SORT_KEYS)
LIMITS = (1, 7, 50, 60)  # below and above DuckDB's late-materialization limit of 50 rows


def _value(rng: random.Random, sort: str, i: int) -> object:
    """A key with NULLs, sentinel-equal values and ties, growing with i (newer runs have larger keys)."""
    roll = rng.random()
    if roll < 0.05:
        return None
    if roll < 0.08:
        return SORT_KEYS[sort].sentinel
    if sort == "start_time":
        return BASE + timedelta(seconds=i // 3)  # three runs per second: ties
    return i // 4 if sort in ("steps", "input_tokens") else float(i // 4) / 2


def _insert(conn: duckdb.DuckDBPyConnection, rng: random.Random, first: int, count: int, project: str | None = None) -> None:
    rows = []
    for i in range(first, first + count):
        values = {sort: _value(rng, sort, i) for sort in SORTS}
        rows.append((
            project or rng.choice(["alpha", "beta"]), f"{rng.getrandbits(128):032x}", rng.choice([None, "live"]),
            values["start_time"], values["duration_ms"], values["cost_usd"], values["steps"], values["input_tokens"],
        ))  # fmt: skip
    rng.shuffle(rows)
    conn.begin()  # one commit, not one per row
    conn.executemany(
        "INSERT INTO runs (project, trace_id, mode, start_time, duration_ms, cost_usd, steps, input_tokens, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, now())",
        rows,
    )
    conn.commit()


@pytest.fixture(scope="module")
def blank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated, empty store file: each test's databases are copies (migrating each would take seconds)."""
    path = tmp_path_factory.mktemp("runs") / "blank.duckdb"
    conn = duckdb.connect(str(path))
    migrate(conn)
    conn.close()
    return path


_copies = itertools.count()


@pytest.fixture
def database(blank: Path) -> Iterator:
    """`database(seed, first, count)`: a store of `count` runs whose keys grow from index `first`."""
    opened: list[duckdb.DuckDBPyConnection] = []

    def make(seed: int, first: int = 0, count: int = 300) -> duckdb.DuckDBPyConnection:
        path = blank.with_name(f"copy-{next(_copies)}.duckdb")
        shutil.copyfile(blank, path)
        conn = duckdb.connect(str(path))
        opened.append(conn)
        _insert(conn, random.Random(seed), first, count)
        return conn

    yield make
    for conn in opened:
        conn.close()


def full_sort(conn: duckdb.DuckDBPyConnection, filters: RunFilters, sort: str) -> list[dict]:
    """Every matching run newest (largest) first, by one full sort of the coalesced key."""
    where = runs_where(filters)
    key = SORT_KEYS[sort].expression
    cur = conn.execute(
        f"SELECT {RUN_SELECT} FROM runs WHERE {where.sql()} ORDER BY {key} DESC, trace_id DESC, project DESC",
        where.params,
    )
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Which way each page read went: "remembered" (the bound held) or "exact" (none, or it did not hold).
    A fresh memory of thresholds per test, so no test sees another's."""
    monkeypatch.setattr(runs_window, "_HINTS", runs_window._Thresholds())
    ways: list[str] = []
    hinted = runs_window._hinted

    def recording(*args: object) -> list[dict] | None:
        rows = hinted(*args)  # type: ignore[arg-type]
        ways.append("exact" if rows is None else "remembered")
        return rows

    monkeypatch.setattr(runs_window, "_hinted", recording)
    yield ways


def page(conn: duckdb.DuckDBPyConnection, filters: RunFilters, sort: str, limit: int) -> list[dict]:
    cur = conn.cursor()
    try:
        return list_runs(cur, filters, sort=sort, limit=limit).rows  # type: ignore[arg-type]
    finally:
        cur.close()


FILTERS = {"live (the default)": RunFilters(), "one project": RunFilters(projects=frozenset({"beta"}), modes=None)}


@pytest.mark.parametrize("filters", list(FILTERS))
@pytest.mark.parametrize("sort", SORTS)
def test_a_page_read_again_after_newer_tied_and_null_runs_arrive(reads, database, sort, filters):
    conn = database(19)
    f = FILTERS[filters]
    for limit in LIMITS:
        assert page(conn, f, sort, limit) == full_sort(conn, f, sort)[:limit]
        assert page(conn, f, sort, limit) == full_sort(conn, f, sort)[:limit]
    assert reads == ["exact", "remembered"] * len(LIMITS)  # nothing remembered yet, then the first read's bound
    rng = random.Random(7)
    _insert(conn, rng, 300, 40)  # newer runs, some NULL or sentinel-valued
    _insert(conn, rng, 250, 40)  # runs tied with the keys the pages ended on
    reads.clear()
    for limit in LIMITS:
        assert page(conn, f, sort, limit) == full_sort(conn, f, sort)[:limit], f"limit {limit}"
    assert reads == ["remembered"] * len(LIMITS)  # more runs above a bound never break it


@pytest.mark.parametrize("sort", SORTS)
def test_a_page_read_again_after_its_top_runs_are_deleted(reads, database, sort):
    conn = database(23)
    f = RunFilters()
    for limit in LIMITS:
        assert page(conn, f, sort, limit) == full_sort(conn, f, sort)[:limit]
    top = full_sort(conn, f, sort)[:40]
    conn.begin()
    conn.executemany("DELETE FROM runs WHERE trace_id = ? AND project = ?", [(r["trace_id"], r["project"]) for r in top])
    conn.commit()
    reads.clear()
    for limit in LIMITS:
        assert page(conn, f, sort, limit) == full_sort(conn, f, sort)[:limit], f"limit {limit}"
    assert "exact" in reads  # some bound no longer held: those pages were read the exact way
    for limit in LIMITS:  # and each read remembered its new bound
        assert page(conn, f, sort, limit) == full_sort(conn, f, sort)[:limit], f"limit {limit}"
    assert reads[-len(LIMITS):] == ["remembered"] * len(LIMITS)


@pytest.mark.parametrize("other", ["older", "newer"])
@pytest.mark.parametrize("sort", SORTS)
def test_a_bound_remembered_from_another_database_never_changes_the_page(reads, database, sort, other):
    """Thresholds are remembered per sort, filters and size, not per database: one from another store is a
    guess like any other."""
    first = database(29, first=1000 if other == "newer" else 0)  # every key of `first` above or below `second`'s
    second = database(31, first=0 if other == "newer" else 1000)
    f = RunFilters()
    for limit in LIMITS:
        page(first, f, sort, limit)
        assert page(second, f, sort, limit) == full_sort(second, f, sort)[:limit], f"limit {limit}"
    # a bound above every run bounds nothing (read the exact way); one below them all bounds the whole table
    assert reads[1::2] == ["exact" if other == "newer" else "remembered"] * len(LIMITS)


def test_an_ascending_page_never_uses_a_bound(reads, database):
    """Oldest first, NULL keys sort first and lie outside any `key <= bound` window: never remembered."""
    conn = database(37)
    for _ in range(2):
        for limit in LIMITS:
            cur = conn.cursor()
            rows = list_runs(cur, RunFilters(), sort="duration_ms", order="asc", limit=limit).rows
            cur.close()
            where = runs_where(RunFilters())
            key = SORT_KEYS["duration_ms"].expression
            expected = conn.execute(
                f"SELECT {RUN_SELECT} FROM runs WHERE {where.sql()} ORDER BY {key} ASC, trace_id ASC, project ASC "
                "LIMIT ?", [*where.params, limit],
            )
            names = [d[0] for d in expected.description]
            assert rows == [dict(zip(names, r, strict=True)) for r in expected.fetchall()]
    assert reads == []
