"""`run_write` on the ClickHouse store runs this store's own write functions (saved views) and
refuses, with 501 "not available", a service whose write is still DuckDB SQL (score configs,
the search rebuild, queues...): such a write must never reach ClickHouse half-done or as a 500.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import httpx
import pytest

from ingest.errors import NotAvailable
from ingest.queries.views import ViewSpec
from ingest.scores import config_store
from ingest.store.clickhouse.queries import views


def test_own_write_functions_run_and_duckdb_sql_is_refused(open_ch_store: Any) -> None:
    store = open_ch_store()
    made = store.run_write(partial(views.insert_view, project="A", spec=ViewSpec("v", "runs"), created_by=None))
    assert made.result(30).name == "v"
    assert [v.name for v in store.run_write(partial(views.list_views, projects=None, page=None)).result(30)] == ["v"]
    with pytest.raises(NotAvailable, match="not available on the clickhouse store yet"):
        store.run_write(lambda conn: conn.execute("DELETE FROM saved_views WHERE true"))
    with pytest.raises(NotAvailable):
        store.run_write(partial(config_store.upsert, project="A"))
    assert [v.name for v in store.run_write(partial(views.list_views, projects=None, page=None)).result(30)] == ["v"]


def test_a_duckdb_service_write_answers_501_over_http(start_ingest_server: Any) -> None:
    srv = start_ingest_server(grpc_port=0, store="clickhouse")
    r = httpx.post(srv.http_url + "/api/score-configs", json={"name": "q", "data_type": "numeric"}, timeout=30)
    assert r.status_code == 501 and "not available on the clickhouse store yet" in r.text, r.text
    r = httpx.post(srv.http_url + "/api/search/reindex", timeout=30)
    assert r.status_code == 501, r.text
    made = httpx.post(srv.http_url + "/api/views", json={"name": "v", "page": "runs"}, timeout=30)
    assert made.status_code == 201, made.text
