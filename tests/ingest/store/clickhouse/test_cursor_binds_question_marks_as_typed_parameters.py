"""The ClickHouse cursor: `?` placeholders become typed server-side parameters (values never enter
the SQL text), results read like DuckDB's (naive UTC timestamps), and the time limit stops a slow
statement with a TimeoutError (the API's 504)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from ingest.store.clickhouse.cursor import ClickHouseCursor, bind
from ingest.store.clickhouse.transport import ChdbTransport


@pytest.fixture
def transport(tmp_path: Path):
    t = ChdbTransport(str(tmp_path / "ch"))
    yield t
    t.close()


def test_values_round_trip_exactly_with_their_types(transport: ChdbTransport) -> None:
    hostile = "x'; DROP TABLE spans; --\n\t\\ \"q\""
    when = datetime(2026, 3, 4, 5, 6, 7, 891011)
    cur = ClickHouseCursor(transport, 10)
    row = cur.execute("SELECT ?, ?, ?, ?, ?, ?, '?' AS literal", [hostile, 42, 2.5, True, when, [hostile, "b"]]).fetchone()
    assert row == (hostile, 42, 2.5, True, when, [hostile, "b"], "?")
    assert [d[0] for d in cur.description][-1] == "literal"
    assert cur.execute("SELECT ? IS NULL", [None]).fetchall() == [(True,)]


def test_placeholder_count_must_match() -> None:
    with pytest.raises(ValueError, match="more \\? placeholders"):
        bind("SELECT ?, ?", [1])
    with pytest.raises(ValueError, match="2 parameter"):
        bind("SELECT ?", [1, 2])
    assert bind("SELECT '?', `a?`, ?", ["v"]) == ("SELECT '?', `a?`, {p0:String}", {"p0": "v"})


def test_slow_statement_stopped_by_the_time_limit(transport: ChdbTransport) -> None:
    cur = ClickHouseCursor(transport, 1)
    with pytest.raises(TimeoutError, match="1 s time limit"):
        cur.execute("SELECT count() FROM numbers(100000000000) WHERE sipHash64(number) = 7")
