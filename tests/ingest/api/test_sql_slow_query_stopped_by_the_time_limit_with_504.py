"""A `POST /api/sql` query running past `sql_timeout_s` is interrupted and answered 504 naming the
limit; the server keeps answering (the interrupt hit that query's cursor only).

The failure this covers: a cross join of the spans view with itself a few times would hold a DuckDB
thread for hours and the request forever.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.sql_helpers import RUNS, post_sql, rows, send_runs


@pytest.mark.parametrize("backend", BACKENDS)
def test_cross_join_bomb_is_504_within_the_limit(start_ingest_server: Callable[..., Any], backend: str) -> None:
    srv = start_ingest_server(grpc_port=0, sql_timeout_s=0.5, store=backend)
    send_runs(srv.http_url)
    assert srv.store.wait_loaded(30)
    started = time.monotonic()
    r = post_sql(srv.http_url, "SELECT count(*) FROM spans a, spans b, spans c, spans d, spans e, spans f, spans g")
    elapsed = time.monotonic() - started
    assert r.status_code == 504, r.text
    assert "time limit of 0.5 s (sql_timeout_s)" in r.json()["detail"]
    assert elapsed < 5, elapsed
    assert rows(srv.http_url, "SELECT count(*) FROM runs") == [[len(RUNS)]]
    assert post_sql(srv.http_url, "SELECT 1 AS one").json()["rows"] == [[1]]
