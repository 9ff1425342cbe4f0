"""SIGKILL mid-load with log records in the spool: every acknowledged log record is in `log_records`
exactly once after restart (crash_writer.py in `logs` mode: each request's log records, one per
span and keyed to it, are acknowledged before its spans; every 4th request is a retry)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.config import Settings
from ingest.store.backend import open_store
from tests.ingest.api.harness import BACKENDS, backend_settings
from tests.ingest.store.test_kill_9_loses_no_acknowledged_span import SPANS_PER_TRACE, _run_and_kill


@pytest.mark.parametrize("backend", BACKENDS)
def test_kill_9_keeps_every_acked_log_record_once(tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "crash.duckdb"
    on_store = backend_settings(tmp_path, backend)
    for name, value in on_store.items():  # the crash writer's Settings read them from its environment
        monkeypatch.setenv(f"STEPLENS_{name.upper()}", value)
    acked: set[str] = set()
    replayed = []
    for seed, kill_after in enumerate([30, 5, 80]):
        acked |= _run_and_kill(db, seed, kill_after, 20 if backend == "duckdb" else 90, "logs")  # chDB starts slower
        store = open_store(Settings(db=db, **on_store))
        store.start()
        try:
            assert store.wait_loaded(20)
            replayed.append(store.stats().replayed_records)
            with store.read() as cur:  # (ClickHouse reads FINAL: a duplicate would show as a lost record)
                dupes = cur.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM log_records GROUP BY project, record_key HAVING count(*) > 1)"
                ).fetchone()[0]
                per_trace = dict(cur.execute("SELECT trace_id, count(*) FROM log_records GROUP BY trace_id").fetchall())
                # each record is keyed to the span its body names
                bodies = cur.execute("SELECT body, span_id FROM log_records").fetchall()
                unkeyed = sum(1 for body, span_id in bodies if json.loads(body) != span_id)
        finally:
            store.stop()
        assert dupes == 0
        missing = [tid for tid in acked if per_trace.get(tid) != SPANS_PER_TRACE]
        assert not missing, f"{len(missing)} acknowledged traces lack log records after kill #{seed + 1}"
        assert unkeyed == 0
    assert len(acked) > 50
    assert sum(replayed) > 0  # some kills landed while acknowledged records were not loaded yet
