"""At most `sql_max_concurrent` `POST /api/sql` queries run at once: one more is answered 429 with
Retry-After, and the slot comes back when a query ends, however it ends (answered, refused by
DuckDB, stopped by the time limit, or its answer abandoned by the client).

The failure this covers: every SQL query holds a DuckDB cursor and a core; a burst of heavy queries
took the CPU from the writer and every page.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.sql_helpers import post_sql, send_runs

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store

BOMB = "SELECT count(*) FROM spans a, spans b, spans c, spans d, spans e, spans f, spans g"


def test_one_query_over_the_limit_is_429_and_slots_come_back(start_ingest_server: Callable[..., Any]) -> None:
    srv = start_ingest_server(grpc_port=0, sql_timeout_s=3.0, sql_max_concurrent=2)
    base = srv.http_url
    send_runs(base)
    assert srv.store.wait_loaded(30)
    answers: list[int] = []
    bombs = [threading.Thread(target=lambda: answers.append(post_sql(base, BOMB).status_code)) for _ in range(2)]
    for t in bombs:
        t.start()
    time.sleep(1.0)  # both bombs are running (each until its 3 s time limit)
    busy = post_sql(base, "SELECT 1 AS one")
    assert busy.status_code == 429, busy.text
    assert "sql_max_concurrent" in busy.json()["detail"] and busy.headers["retry-after"] == "1"
    for t in bombs:
        t.join(30)
    assert answers == [504, 504]
    # the slots are free again, whatever ended the queries: an answer, a DuckDB refusal, an abandoned stream
    assert post_sql(base, "SELECT 1 AS one").json()["rows"] == [[1]]
    assert post_sql(base, "SELECT CAST(name AS INTEGER) FROM spans").status_code == 400
    with httpx.stream("POST", f"{base}/api/sql", json={"sql": "SELECT * FROM spans a, spans b"}, timeout=30) as r:
        assert r.status_code == 200
        next(r.iter_bytes())  # read a little, then hang up
    with httpx.stream("POST", f"{base}/api/sql", json={"sql": "SELECT * FROM spans a, spans b"}, timeout=30) as r:
        assert r.status_code == 200
    time.sleep(3.0 + 2.0 + 1.0)  # the time limit, then the reaper's grace: abandoned answers give their slots back
    again: list[int] = []
    bombs = [threading.Thread(target=lambda: again.append(post_sql(base, BOMB).status_code)) for _ in range(2)]
    for t in bombs:
        t.start()
    for t in bombs:
        t.join(30)
    assert again == [504, 504]  # both ran: no slot was lost
