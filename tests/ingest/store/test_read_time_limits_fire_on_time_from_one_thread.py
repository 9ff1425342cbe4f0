"""Read time limits are deadlines of one shared thread: each fires at its own time, a finished read's never.

`timed_cursor` used to start a `threading.Timer` per read; now every read's limit is a deadline of one
watcher thread (ingest/store/deadlines.py). That must still interrupt each slow query at its own
limit while other reads with longer limits wait (a sooner deadline added later must not wait behind a
later one), must never interrupt a read that has finished (its cursor may be serving nothing or be
closed), and must not start a thread per read.
"""

from __future__ import annotations

import threading
import time

import duckdb
import pytest

from ingest.store.deadlines import DeadlineWatcher
from ingest.store.reader import QueryTimeout, timed_cursor

SLOW = "SELECT count(*) FROM range(100000000000) a, range(10) b WHERE a.range % 7 = b.range"


def test_a_sooner_deadline_added_later_fires_first_and_on_time() -> None:
    watcher = DeadlineWatcher(name="test-deadlines")
    fired: dict[str, float] = {}
    t0 = time.monotonic()
    watcher.after(2.0, lambda: fired.setdefault("late", time.monotonic() - t0))
    time.sleep(0.05)  # the thread now waits for the 2 s deadline
    watcher.after(0.2, lambda: fired.setdefault("soon", time.monotonic() - t0))
    deadline = time.monotonic() + 10
    while len(fired) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert list(fired) == ["soon", "late"]
    assert 0.2 <= fired["soon"] < 1.0
    assert fired["late"] >= 2.0


def test_a_cancelled_deadline_never_fires() -> None:
    watcher = DeadlineWatcher(name="test-deadlines")
    calls: list[int] = []
    for i in range(50):
        watcher.after(0.05, lambda i=i: calls.append(i)).cancel()
    kept = watcher.after(0.1, lambda: calls.append(-1))
    time.sleep(0.5)
    assert calls == [-1]
    assert watcher.pending() == 0
    kept.cancel()  # after it fired: nothing happens
    assert calls == [-1]


def test_slow_reads_are_each_interrupted_at_their_own_limit() -> None:
    conn = duckdb.connect()
    took: dict[float, float] = {}

    def read(limit: float) -> None:
        t0 = time.monotonic()
        with pytest.raises(QueryTimeout), timed_cursor(conn.cursor(), limit) as cur:
            cur.execute(SLOW).fetchall()
        took[limit] = time.monotonic() - t0

    threads = [threading.Thread(target=read, args=(limit,)) for limit in (1.5, 0.3)]  # the longer one first
    for t in threads:
        t.start()
        time.sleep(0.05)
    for t in threads:
        t.join(30)
    assert 0.3 <= took[0.3] < 1.2  # not held up behind the 1.5 s deadline
    assert took[1.5] >= 1.5
    conn.close()


def test_reads_start_no_thread_each() -> None:
    conn = duckdb.connect()
    with timed_cursor(conn.cursor(), 30.0) as cur:  # the watcher is running from here on
        cur.execute("SELECT 1").fetchall()
    before = {t.ident for t in threading.enumerate()}
    for _ in range(100):
        with timed_cursor(conn.cursor(), 30.0) as cur:
            assert cur.execute("SELECT 42").fetchone() == (42,)
            assert {t.ident for t in threading.enumerate()} <= before
    conn.close()
