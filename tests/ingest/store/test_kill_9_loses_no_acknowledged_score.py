"""SIGKILL mid-load with scores in the spool: every acknowledged score is in `scores` exactly once
after restart, with the value it was sent with (crash_writer.py in `scores` mode: each request's
spans, then one score per trace through `submit_scores_blocking`; every 4th request is a retry,
whose scores have the same ids and a newer time, so they replace, never add)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.config import Settings
from ingest.store.backend import open_store
from tests.ingest.api.harness import BACKENDS, backend_settings
from tests.ingest.store.crash_writer import score_for
from tests.ingest.store.test_kill_9_loses_no_acknowledged_span import _run_and_kill


@pytest.mark.parametrize("backend", BACKENDS)
def test_kill_9_keeps_every_acked_score_once(tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "crash.duckdb"
    on_store = backend_settings(tmp_path, backend)
    for name, value in on_store.items():  # the crash writer's Settings read them from its environment
        monkeypatch.setenv(f"STEPLENS_{name.upper()}", value)
    acked: set[str] = set()
    replayed = []
    for seed, kill_after in enumerate([30, 5, 80]):
        acked |= _run_and_kill(db, seed, kill_after, 90, "scores")  # 90 s: a start on a loaded machine
        store = open_store(Settings(db=db, **on_store))
        store.start()
        try:
            assert store.wait_loaded(60)
            replayed.append(store.stats().replayed_records)
            with store.read() as cur:  # (ClickHouse reads FINAL: a duplicate would show as a lost value)
                dupes = cur.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM scores GROUP BY project, score_id HAVING count(*) > 1)"
                ).fetchone()[0]
                per_trace: dict[str, list[float]] = {}
                for trace_id, value in cur.execute(
                    "SELECT trace_id, value_numeric FROM scores WHERE name = 'quality'"
                ).fetchall():
                    per_trace.setdefault(trace_id, []).append(value)
        finally:
            store.stop()
        assert dupes == 0
        missing = [tid for tid in acked if tid not in per_trace]
        assert not missing, f"{len(missing)} acknowledged traces lack their score after kill #{seed + 1}"
        wrong = [tid for tid in acked if per_trace[tid] != [score_for(tid).value]]
        assert not wrong, f"scores of {wrong[:3]} are {[per_trace[t] for t in wrong[:3]]}"
    assert len(acked) > 50
    assert sum(replayed) > 0  # some kills landed while acknowledged records were not loaded yet
