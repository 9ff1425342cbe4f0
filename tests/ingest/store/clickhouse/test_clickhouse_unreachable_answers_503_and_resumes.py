"""ClickHouse unreachable is the environment's failure, never the data's: exports answer 503 with
Retry-After, /readyz says not ready, nothing is dead-lettered; on chDB whose disk is full the same,
and once there is room again every acknowledged span is loaded, without a restart."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx

from tests.ingest.store.otlp_build import agent_run, request
from tests.support.tmpfs import fill, small_tmpfs

MIB = 1024 * 1024


def _post(url: str, body: bytes) -> httpx.Response:
    return httpx.post(f"{url}/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"}, timeout=30)


def test_server_unreachable_at_start_answers_503_and_not_ready(start_ingest_server, tmp_path: Path) -> None:
    refusing = socket.socket()  # bound, never listening: connections to it are refused
    refusing.bind(("127.0.0.1", 0))
    try:
        port = refusing.getsockname()[1]
        srv = start_ingest_server(store="clickhouse", clickhouse_url=f"http://127.0.0.1:{port}")
        root, children = agent_run(steps=1)
        r = _post(srv.http_url, request([root, *children]).SerializeToString())
        assert r.status_code == 503, r.text
        assert r.headers["Retry-After"] == str(srv.settings.retry_after_s)
        ready = httpx.get(f"{srv.http_url}/readyz", timeout=10)
        assert ready.status_code == 503 and "cannot be written" in ready.text, ready.text
        assert httpx.get(f"{srv.http_url}/api/runs", timeout=10).status_code in (501, 503)
        assert srv.store.stats().records_dead_lettered == 0
    finally:
        refusing.close()


def test_full_disk_answers_503_then_loads_everything_acknowledged(start_ingest_server, tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "chdisk", 48 * MIB) as disk:
        srv = start_ingest_server(store="clickhouse", clickhouse_url=f"chdb://{disk / 'ch'}")
        first, first_children = agent_run(steps=1)
        assert _post(srv.http_url, request([first, *first_children]).SerializeToString()).status_code == 200
        assert srv.store.wait_loaded(20)
        filler = fill(disk)
        acked: list[str] = []
        refused = 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (refused == 0 or len(acked) < 1):
            root, children = agent_run(steps=1)
            r = _post(srv.http_url, request([root, *children]).SerializeToString())
            if r.status_code == 200:
                acked.append(root.trace_id)
            else:
                assert r.status_code == 503, r.text
                assert "Retry-After" in r.headers
                refused += 1
                time.sleep(0.05)
        assert refused, "a full disk never answered 503"
        assert httpx.get(f"{srv.http_url}/readyz", timeout=10).status_code == 503
        filler.unlink()
        assert srv.store.wait_loaded(60)
        with srv.store.read() as cur:
            stored = {t for (t,) in cur.execute("SELECT DISTINCT trace_id FROM spans").fetchall()}
        assert {first.trace_id, *acked} <= stored
        assert srv.store.stats().records_dead_lettered == 0
        deadline = time.monotonic() + 15
        while httpx.get(f"{srv.http_url}/readyz", timeout=10).status_code != 200:
            assert time.monotonic() < deadline, "never ready again"
            time.sleep(0.1)
