"""The index's document count is a maintained counter, not a `count(*)` per request; it must stay exactly
the number of documents through inserts (re-indexed ones included), retention's prune, a clear and a
recount, closing and reopening the file, and the upgrade of an index made before the counter (counted
once when the writer opens it, with a log line; unknown, not a guess, to readers before that)."""

from __future__ import annotations

import logging
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

from ingest.search.index import META_DOCUMENTS, Doc, SearchIndex

T0 = datetime(2026, 11, 1)


def _real_count(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])


def _docs(n: int, day: int, prefix: str = "s") -> list[Doc]:
    """n spans starting on day `day` after T0, two fields each."""
    start = T0 + timedelta(days=day)
    return [
        Doc("p", f"t{day}", f"{prefix}{i}", start, field, f"wombat {field} {i}")
        for i in range(n) for field in ("run.task", "run.answer")
    ]


def test_count_follows_inserts_prune_clear_and_reopen(tmp_path):
    path = tmp_path / "x.search"
    index = SearchIndex(path)
    assert index.documents() == 0  # no file yet
    assert index.add(_docs(5, 0)) == 10
    assert index.documents() == _real_count(path) == 10
    assert index.add(_docs(5, 0) + _docs(3, 1)) == 6  # already indexed ones are skipped, not counted
    assert index.documents() == _real_count(path) == 16
    assert index.add(_docs(4, 2), meta={"built_at": "x"}) == 8
    assert index.documents() == _real_count(path) == 24

    assert index.prune_before(T0 + timedelta(days=1)) == 10  # retention drops day 0
    assert index.documents() == _real_count(path) == 14
    assert index.prune_before(T0) == 0
    assert index.documents() == 14

    index.close()  # a restart
    reopened = SearchIndex(path)
    assert reopened.documents() == 14
    reopened.add(_docs(2, 3))
    assert reopened.documents() == _real_count(path) == 18

    reopened.clear()  # the start of `steplens search reindex`
    assert reopened.documents() == _real_count(path) == 0
    reopened.add(_docs(3, 4))
    assert reopened.recount() == 6 and reopened.documents() == _real_count(path) == 6
    reopened.close()


def test_failed_write_changes_neither_documents_nor_count(tmp_path):
    path = tmp_path / "x.search"
    index = SearchIndex(path)
    index.add(_docs(2, 0))

    def broken():
        yield from _docs(3, 1)
        raise OSError("the disk went away mid-batch")

    try:
        index.add(broken())
    except OSError:
        pass
    else:
        raise AssertionError("the failing batch was not reported")
    assert index.documents() == _real_count(path) == 4
    index.close()


def test_index_made_before_the_counter_is_counted_once_at_open(tmp_path, caplog):
    path = tmp_path / "old.search"
    index = SearchIndex(path)
    index.add(_docs(7, 0), meta={"built_at": "2026-11-01T00:00:00"})
    index.close()
    with sqlite3.connect(path) as conn:  # what an index of an earlier version holds: no counter
        conn.execute("DELETE FROM meta WHERE key = ?", (META_DOCUMENTS,))

    upgraded = SearchIndex(path)
    assert upgraded.documents() is None  # unknown until counted: never reported as 0
    with caplog.at_level(logging.INFO, logger="ingest.search.index"):
        upgraded.writer()
    assert any("counted its 14 document(s)" in r.getMessage() for r in caplog.records)
    assert upgraded.documents() == _real_count(path) == 14
    upgraded.add(_docs(1, 1))
    assert upgraded.documents() == _real_count(path) == 16
    upgraded.close()

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ingest.search.index"):
        again = SearchIndex(path)
        again.writer()  # the next start: the counter is there, nothing is counted
    assert not [r for r in caplog.records if "counted" in r.getMessage()]
    assert again.documents() == 16
    again.close()
