"""A full disk is a 503 with Retry-After, never a 500 and never a lost ack, and the server heals
by itself when space returns: on a real tmpfs filled to the last byte, for the spool, for the
database's commit and for a checkpoint that invalidates the DuckDB instance."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from ingest.errors import StorageUnavailable
from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request
from tests.support.tmpfs import fill, small_tmpfs

MIB = 1024 * 1024


def _body(steps: int = 1) -> tuple[bytes, str]:
    root, children = agent_run(steps=steps)
    return request([root, *children]).SerializeToString(), root.trace_id


def _post(url: str, body: bytes) -> httpx.Response:
    return httpx.post(url + "/v1/traces", content=body, headers={"content-type": "application/x-protobuf"}, timeout=30)


def _until(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _stored(store) -> dict[str, int]:
    with store.read() as cur:
        return dict(cur.execute("SELECT trace_id, count(*) FROM spans GROUP BY trace_id").fetchall())


@pytest.mark.parametrize("backend", BACKENDS)
def test_spool_disk_full_503_retry_after_then_ready_again(start_ingest_server, tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "spooldisk", 4 * MIB) as disk:
        server = start_ingest_server(spool_dir=disk / "spool")
        acked = []
        body, trace = _body()
        assert _post(server.http_url, body).status_code == 200
        acked.append(trace)

        filler = fill(disk)
        answers = []
        for _ in range(4):  # 25 spans each: more than the last page the segment file already has
            body, trace = _body(steps=8)
            response = _post(server.http_url, body)
            answers.append(response.status_code)
            if response.status_code == 200:  # it still fit: acknowledged, so it must be stored
                acked.append(trace)
                continue
            assert response.status_code == 503, response.text
            assert response.headers["retry-after"] == str(server.settings.retry_after_s)
        assert answers.count(503) >= 3, answers
        ready = httpx.get(server.http_url + "/readyz")
        assert ready.status_code == 503 and "spool cannot be written" in ready.json()["reason"]
        assert server.store.stats().unwritable is not None

        segments = sorted((disk / "spool").glob("*.seg"))
        assert all(p.read_bytes()[:8] == b"SLSPOOL1" for p in segments)  # no empty segment per failed try
        filler.unlink()
        assert _until(lambda: httpx.get(server.http_url + "/readyz").status_code == 200)
        body, trace = _body()
        assert _post(server.http_url, body).status_code == 200
        acked.append(trace)
        assert server.store.wait_loaded(20)
        stored = _stored(server.store)
        assert set(stored) == set(acked)  # every ack stored, nothing refused stored
        assert stored[acked[0]] == 4 and stored[acked[-1]] == 4 and sum(stored.values()) in (8, 8 + 25)
        assert server.store.stats().records_dead_lettered == 0
        assert server.store.stats().queue_bytes == 0  # refused requests hold no queue budget


def test_database_commit_disk_full_retried_not_dead_lettered(open_store, tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "dbdisk", 24 * MIB) as disk:
        store = open_store(db=disk / "steplens.duckdb", spool_dir=tmp_path / "spool")
        first, first_kids = agent_run(steps=1)
        store.submit_blocking("p", request([first, *first_kids]))
        assert store.wait_loaded(20)

        filler = fill(disk)
        acked = [first.trace_id]
        root, kids = agent_run(steps=2)
        store.submit_blocking("p", request([root, *kids]))  # the spool has room: acknowledged
        acked.append(root.trace_id)
        assert _until(lambda: store.stats().unwritable is not None), "the failing commit is not reported"
        assert not store.ready()
        with pytest.raises(StorageUnavailable):
            store.submit_blocking("p", request(list(agent_run(steps=1)[1])))
        time.sleep(1.0)  # several retries fail meanwhile
        assert store.stats().records_dead_lettered == 0
        assert not (store.settings.spool_path / "dead").exists()

        filler.unlink()
        assert _until(store.ready), store.stats().unwritable
        assert store.wait_loaded(20)
        stored = _stored(store)
        assert stored == {first.trace_id: 4, root.trace_id: 7}
        assert store.stats().records_dead_lettered == 0


def test_checkpoint_disk_full_invalidates_then_reopens_by_itself(open_store, tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "dbdisk", 24 * MIB) as disk:
        # checkpoint whenever idle with anything in the WAL: the small load commits, its checkpoint fails
        store = open_store(
            db=disk / "steplens.duckdb", spool_dir=tmp_path / "spool", checkpoint_idle_wal_bytes=1,
        )
        first, first_kids = agent_run(steps=1)
        store.submit_blocking("p", request([first, *first_kids]))
        assert store.wait_loaded(20)

        filler = fill(disk, leave_bytes=160 * 1024)
        root, kids = agent_run(steps=2)
        store.submit_blocking("p", request([root, *kids]))
        assert _until(lambda: store.stats().unwritable is not None), "the failed checkpoint is not reported"
        assert not store.ready()

        filler.unlink()
        assert _until(store.ready, 30), store.stats().unwritable
        later, later_kids = agent_run(steps=1)
        store.submit_blocking("p", request([later, *later_kids]))
        assert store.wait_loaded(20)
        assert _stored(store) == {first.trace_id: 4, root.trace_id: 7, later.trace_id: 4}
        assert store.stats().writer_error is None and store.stats().records_dead_lettered == 0
        store.stop()  # checkpoints and closes the reopened database

        store = open_store(db=disk / "steplens.duckdb", spool_dir=tmp_path / "spool")
        assert store.stats().replayed_records == 0  # everything was loaded and the mark moved
        assert _stored(store) == {first.trace_id: 4, root.trace_id: 7, later.trace_id: 4}
