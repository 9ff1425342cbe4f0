"""`POST /api/sql` answers stop at `sql_max_rows` rows (or the request's smaller `limit`) and before
`sql_max_result_bytes` bytes, and the JSON answer says which limit cut it; the order the query asked
for is kept.

The failure this covers: `SELECT * FROM spans` over millions of spans would build an answer of
gigabytes in the server's memory.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pyarrow as pa
import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.sql_helpers import RUNS, post_sql, send_runs

SPANS = len(RUNS) + 3 * sum(r[1] for r in RUNS)


@pytest.fixture(params=BACKENDS)
def base(request: pytest.FixtureRequest, start_ingest_server: Callable[..., Any]) -> str:
    srv = start_ingest_server(grpc_port=0, store=request.param, sql_max_rows=7, sql_max_result_bytes=4096)
    send_runs(srv.http_url)
    assert srv.store.wait_loaded(30)
    return srv.http_url


def test_row_limit_keeps_the_first_rows_in_order(base: str) -> None:
    r = post_sql(base, "SELECT start_time, span_id FROM spans ORDER BY start_time DESC, span_id")
    answer = r.json()
    assert r.headers["x-steplens-row-limit"] == "7"
    assert answer["row_count"] == 7 and answer["truncated"] is True and answer["truncated_by"] == "row_limit"
    times = [datetime.fromisoformat(row[0]) for row in answer["rows"]]
    assert times == sorted(times, reverse=True)
    latest = post_sql(base, "SELECT max(start_time) FROM spans").json()["rows"][0][0]
    assert times[0] == datetime.fromisoformat(latest)
    smaller = post_sql(base, "SELECT span_id FROM spans", limit=3).json()
    assert smaller["row_count"] == 3 and smaller["truncated_by"] == "row_limit"
    exact = post_sql(base, f"SELECT span_id FROM spans LIMIT {7}").json()
    assert exact["row_count"] == 7 and exact["truncated"] is False  # exactly the limit: nothing was cut
    arrow = post_sql(base, "SELECT span_id FROM spans", format="arrow")
    assert pa.ipc.open_stream(arrow.content).read_all().num_rows == 7
    assert SPANS > 7


def test_byte_limit_keeps_the_leading_rows_that_fit(start_ingest_server: Callable[..., Any]) -> None:
    srv = start_ingest_server(grpc_port=0, sql_max_result_bytes=4096)
    send_runs(srv.http_url)
    assert srv.store.wait_loaded(30)
    sql = "SELECT span_id, attributes, resource FROM spans ORDER BY span_id"
    r = post_sql(srv.http_url, sql)
    answer = r.json()
    assert answer["truncated"] is True and answer["truncated_by"] == "byte_limit", answer["truncated_by"]
    assert 0 < answer["row_count"] < SPANS
    assert len(r.content) <= 4096 + 200  # only the trailer comes after the limit
    ids = post_sql(srv.http_url, "SELECT span_id FROM spans ORDER BY span_id").json()["rows"]
    assert [row[0] for row in answer["rows"]] == [row[0] for row in ids[: answer["row_count"]]]
    csv = post_sql(srv.http_url, sql, format="csv")
    assert 0 < len(csv.content) <= 4096 and csv.text.startswith('"span_id"')
