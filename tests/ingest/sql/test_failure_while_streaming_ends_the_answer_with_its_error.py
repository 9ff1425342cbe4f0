"""A query that fails after its first rows were sent (a value that does not convert three million rows
down, the time limit running out while rows stream) ends the answer: JSON keeps the rows sent and
says why it stopped, the failing value masked; CSV and Arrow just end (Arrow without its end marker).

The failure this covers: DuckDB reports an error met while streaming as an OSError from the Arrow
reader, not as a DuckDB error; it went unhandled and the answer broke off as a 500.

Run on a real DuckDB through `ingest.sql.run.start`, with the statement built by hand: the checker
(ingest/sql/check.py) rightly refuses `range()`, and a real server's views would need millions of
stored spans to stream past DuckDB's read-ahead.

DuckDB only: on ClickHouse the answer is computed whole before it streams (design.md §4), so an
error ends it before the first row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb
import pyarrow as pa
import pytest

from ingest.sql.check import Prepared
from ingest.sql.encode import ArrowEncoder, CsvEncoder, JsonEncoder
from ingest.sql.run import SqlLimits, start

LATE = "SELECT CASE WHEN range > 3000000 THEN CAST('x' || range AS INTEGER) ELSE range END AS v FROM range(4000000)"
ENDLESS = "SELECT range AS v FROM range(100000000000)"


class _Store:
    def __init__(self) -> None:
        self.conn = duckdb.connect(config={"threads": 1})

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        cur = self.conn.cursor()
        try:
            yield cur
        finally:
            cur.close()


@pytest.fixture
def store() -> Iterator[_Store]:
    s = _Store()
    yield s
    s.conn.close()


def _limits(timeout_s: float = 30.0) -> SqlLimits:
    return SqlLimits(timeout_s=timeout_s, max_rows=10_000_000, max_result_bytes=1 << 30, max_query_bytes=1 << 16)


def test_a_late_conversion_error_ends_the_json_answer_with_the_error_masked(store: _Store) -> None:
    started = start(store, Prepared(LATE, [], ()), _limits(), LATE)
    assert started.first is not None and started.first.num_rows > 0  # the first rows were fine
    answer = json.loads(b"".join(started.rows(JsonEncoder(started.columns, started.types))))
    assert answer["error"].startswith("the query failed while streaming: Conversion Error")
    assert "x3000001" not in answer["error"] and "'…'" in answer["error"]
    assert 0 < answer["row_count"] <= 3_000_000
    assert [row[0] for row in answer["rows"][:3]] == [0, 1, 2] and answer["rows"][-1][0] == answer["row_count"] - 1


def test_csv_and_arrow_answers_cut_by_an_error_just_end(store: _Store) -> None:
    started = start(store, Prepared(LATE, [], ()), _limits(), LATE)
    text = b"".join(started.rows(CsvEncoder(started.columns))).decode()
    lines = text.splitlines()
    assert lines[0] == '"v"' and 1 < len(lines) <= 3_000_001 and lines[-1] == str(len(lines) - 2)
    started = start(store, Prepared(LATE, [], ()), _limits(), LATE)
    data = b"".join(started.rows(ArrowEncoder(started.schema)))
    assert not data.endswith(ArrowEncoder.END_OF_STREAM)
    reader = pa.ipc.open_stream(data)
    assert reader.read_all().num_rows > 0  # what arrived is readable: the batches before the error


def test_the_time_limit_stops_an_endless_stream_and_says_so(store: _Store) -> None:
    started = start(store, Prepared(ENDLESS, [], ()), _limits(timeout_s=0.5), ENDLESS)
    answer = json.loads(b"".join(started.rows(JsonEncoder(started.columns, started.types))))
    assert answer["error"] == "the query ran past the time limit of 0.5 s while streaming; rows cut"
    assert 0 < answer["row_count"] < 100_000_000_000
