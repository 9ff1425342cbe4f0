"""Normalization runs in spawned worker processes (a second core for the GIL-bound part). What must
hold: the rows are the same as normalizing in-process, a poison record is still dead-lettered (not
lost, not crashing the pool), and a worker that dies is replaced without losing an acknowledged span."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ingest.normalize import spans_table
from ingest.normalize.process import NormalizePool
from tests.ingest.api.harness import BACKENDS
from tests.ingest.store.otlp_build import agent_run, request

ROOT = Path(__file__).resolve().parents[3]


def test_worker_table_equals_in_process_table() -> None:
    root, kids = agent_run(steps=2)
    req = request([root, *kids])
    now = datetime.now(UTC).replace(tzinfo=None)
    pool = NormalizePool(1, None)
    try:
        table = pool.normalize("p", req.SerializeToString(), now)
    finally:
        pool.close()
    assert table is not None
    assert table.equals(spans_table("p", req, now))


def test_undecodable_payload_gives_none_for_the_fallback_path() -> None:
    pool = NormalizePool(1, None)
    try:
        assert pool.normalize("p", b"\xff\xff not protobuf", datetime(2025, 1, 1)) is None
        root, kids = agent_run(steps=1)  # the pool still works after a failed request
        assert pool.normalize("p", request([root, *kids]).SerializeToString(), datetime(2025, 1, 1)) is not None
    finally:
        pool.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_killed_worker_is_replaced_and_no_acknowledged_span_is_lost(open_store) -> None:
    store = open_store(normalize_processes=1)
    root, kids = agent_run(steps=1)
    store.submit_blocking("p", request([root, *kids]), timeout=30)
    workers = list(store._pool._executor._processes)  # noqa: SLF001 - the real worker pid to kill
    assert workers
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    for _ in range(5):  # the request that meets the dead pool falls back in-thread; later ones use a new pool
        root, kids = agent_run(steps=1)
        store.submit_blocking("p", request([root, *kids]), timeout=30)
    assert store.wait_loaded(10)
    with store.read() as cur:
        assert cur.execute("SELECT count(*), count(DISTINCT trace_id) FROM spans").fetchone() == (6 * 4, 6)
    assert store.stats().records_dead_lettered == 0


_POOL_OWNER = """
import sys, time
from datetime import datetime
from ingest.normalize.process import NormalizePool
from tests.ingest.store.otlp_build import agent_run, request
pool = NormalizePool(2, None)
root, kids = agent_run(steps=1)
assert pool.normalize("p", request([root, *kids]).SerializeToString(), datetime(2025, 1, 1)) is not None
print(*pool._executor._processes, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status  # a zombie waiting for init to reap it is gone too


def test_workers_exit_when_their_server_is_killed() -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", _POOL_OWNER], cwd=ROOT, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        workers = [int(pid) for pid in owner.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(pid) for pid in workers)
        owner.kill()  # SIGKILL: no pool shutdown runs
        owner.wait(10)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in workers), "orphaned normalize workers outlived their server"
    finally:
        owner.kill()
        owner.wait(10)
