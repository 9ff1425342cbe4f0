"""SIGKILL mid-load with scores in the spool: every acknowledged score is in `scores` exactly once
after restart, with the value it was sent with (crash_writer.py in `scores` mode: each request's
spans, then one score per trace through `submit_scores_blocking`; every 4th request is a retry,
whose scores have the same ids and a newer time, so they replace, never add)."""

from __future__ import annotations

from pathlib import Path

from ingest.config import Settings
from ingest.store import SpanStore
from tests.ingest.store.crash_writer import score_for
from tests.ingest.store.test_kill_9_loses_no_acknowledged_span import _run_and_kill


def test_kill_9_keeps_every_acked_score_once(tmp_path: Path) -> None:
    db = tmp_path / "crash.duckdb"
    acked: set[str] = set()
    replayed = []
    for seed, kill_after in enumerate([30, 5, 80]):
        acked |= _run_and_kill(db, seed, kill_after, 20, "scores")
        store = SpanStore(Settings(db=db))
        store.start()
        try:
            assert store.wait_loaded(20)
            replayed.append(store.stats().replayed_records)
            with store.read() as cur:
                dupes = cur.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM scores GROUP BY project, score_id HAVING count(*) > 1)"
                ).fetchone()[0]
                per_trace = dict(cur.execute(
                    "SELECT trace_id, list(value_numeric) FROM scores WHERE name = 'quality' GROUP BY trace_id"
                ).fetchall())
        finally:
            store.stop()
        assert dupes == 0
        missing = [tid for tid in acked if tid not in per_trace]
        assert not missing, f"{len(missing)} acknowledged traces lack their score after kill #{seed + 1}"
        wrong = [tid for tid in acked if per_trace[tid] != [score_for(tid).value]]
        assert not wrong, f"scores of {wrong[:3]} are {[per_trace[t] for t in wrong[:3]]}"
    assert len(acked) > 50
    assert sum(replayed) > 0  # some kills landed while acknowledged records were not loaded yet
