"""A dataset of more runs than one read can turn into cases within the query time limit is saved
whole: the cases are built a few dozen runs per read, each read with the limit to itself. (Built in
one read, 400 runs ran past the default 10 s limit on a loaded machine and the request was a 504.)"""

from __future__ import annotations

import httpx

from kernel.examples.demo import run_demo

RUNS = 160
TIME_LIMIT_S = 3.0


def test_a_dataset_bigger_than_one_read_is_not_a_504(start_ingest_server) -> None:  # type: ignore[no-untyped-def]
    srv = start_ingest_server(grpc_port=0, alerts_defaults=False, query_timeout_s=TIME_LIMIT_S)
    assert run_demo(srv.http_url, RUNS, seed=2, concurrency=32, progress=False, days=0).export_complete
    assert srv.store.wait_loaded(60)
    r = httpx.post(srv.http_url + "/api/datasets", json={"name": "everything", "filter": {"limit": 1000}},
                   timeout=600)
    assert r.status_code == 200, r.text
    saved = r.json()
    assert saved["cases"] + len(saved["skipped"]) == RUNS
    lines = httpx.get(srv.http_url + "/api/datasets/everything", timeout=60).text.splitlines()
    assert len(lines) == saved["cases"] > RUNS // 2
