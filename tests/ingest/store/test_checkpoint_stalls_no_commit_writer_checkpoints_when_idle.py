"""DuckDB's automatic checkpoint ran inside whichever load COMMIT crossed the WAL threshold, stalling
that load by 0.5-0.9 s under load. The writer turns it off and checkpoints itself when idle (or at a
hard WAL cap); these tests pin that down on a real database file.

DuckDB only: WAL checkpoints are DuckDB's file format."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from ingest.store import SpanStore
from tests.ingest.store.otlp_build import agent_run, request


def _wal(store: SpanStore) -> Path:
    db = store.settings.db
    return db.with_name(db.name + ".wal")


async def _load_runs(store: SpanStore, runs: int) -> None:
    for _ in range(runs):
        root, kids = agent_run(steps=2)
        await store.submit("p", request([root, *kids]))
    assert store.wait_loaded(10)


async def test_automatic_checkpoint_is_off_and_the_wal_grows_below_the_idle_threshold(open_store) -> None:
    store = open_store(checkpoint_idle_wal_bytes=1 << 30, checkpoint_max_wal_bytes=1 << 31)
    with store.read() as cur:
        threshold = cur.execute("SELECT current_setting('checkpoint_threshold')").fetchone()[0]
    assert "GiB" in threshold  # DuckDB's default is 16 MiB
    await _load_runs(store, 5)
    assert store.stats().checkpoints == 0
    assert _wal(store).stat().st_size > 0  # committed, not yet checkpointed: still durable in the WAL
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM spans").fetchone() == (5 * 7,)


async def test_idle_writer_checkpoints_once_the_wal_passes_the_threshold(open_store) -> None:
    store = open_store(checkpoint_idle_wal_bytes=1, checkpoint_max_wal_bytes=0)
    await _load_runs(store, 3)
    # the checkpoint follows the writer's last commit (the load, then the analytics upkeep pass)

    def wal_empty() -> bool:
        return not _wal(store).exists() or _wal(store).stat().st_size == 0

    deadline = time.monotonic() + 10
    while not (store.stats().checkpoints >= 1 and wal_empty()) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert store.stats().checkpoints >= 1
    assert wal_empty()
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM spans").fetchone() == (3 * 7,)


async def test_data_left_in_the_wal_survives_a_restart(open_store) -> None:
    store = open_store(checkpoint_idle_wal_bytes=1 << 30, checkpoint_max_wal_bytes=1 << 31)
    await _load_runs(store, 4)
    store._conn.close()  # noqa: SLF001 - simulate a stop without the shutdown CHECKPOINT
    store._started = False  # noqa: SLF001
    reopened = open_store()
    with reopened.read() as cur:
        assert cur.execute("SELECT count(*) FROM spans").fetchone() == (4 * 7,)
        assert cur.execute("SELECT count(*) FROM runs").fetchone() == (4,)


async def test_duckdb_memory_limit_comes_from_settings(open_store) -> None:
    store = open_store(duckdb_memory_limit="300MB")
    with store.read() as cur:
        limit = cur.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert limit.startswith("286")  # 300 MB in MiB as DuckDB prints it
