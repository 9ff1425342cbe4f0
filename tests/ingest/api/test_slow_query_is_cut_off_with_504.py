"""A read running past the store's time limit is interrupted and answered 504, never left hanging."""

from __future__ import annotations

import time

import pytest
from fastapi import HTTPException

from ingest.api.execute import run_read
from tests.ingest.api.harness import BACKENDS


def test_slow_query_becomes_504_with_the_limit_in_the_message(make_server):
    server = make_server(query_timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(HTTPException) as info:
        run_read(
            server.store,
            lambda cur: cur.execute("SELECT count(*) FROM range(100000000000) a WHERE a.range % 7 = 3").fetchall(),
            timeout_s=0.3,
        )
    assert time.monotonic() - started < 10
    assert info.value.status_code == 504
    assert "time limit of 0.3 s" in info.value.detail
    # The store still answers afterwards: the interrupt hit one cursor only.
    r = server.get("/api/runs")
    assert r.status_code == 200 and r.json() == {"runs": [], "next": None}


@pytest.mark.parametrize("backend", BACKENDS)
def test_sql_errors_are_500_with_a_message_not_a_crash(server):
    with pytest.raises(HTTPException) as info:
        run_read(server.store, lambda cur: cur.execute("SELECT no_such_column FROM runs").fetchall())
    assert info.value.status_code == 500 and "query failed" in info.value.detail
