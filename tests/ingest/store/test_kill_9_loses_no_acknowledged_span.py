"""SIGKILL mid-load: the database still opens, and every acknowledged span is there exactly once.

A subprocess runs a SpanStore under concurrent load and prints each acknowledged request's trace
ids; it is killed with SIGKILL at varying moments, several times over the same files (each run
also re-sends earlier requests), and a fresh SpanStore then checks the acknowledged set.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from ingest.config import Settings
from ingest.store import SpanStore

REPO = Path(__file__).resolve().parents[3]
SCRIPT = Path(__file__).with_name("crash_writer.py")
SPANS_PER_TRACE = 7  # agent_run(steps=2): root + 3 spans per step


def _run_and_kill(db: Path, seed: int, kill_after_acks: int, timeout: float = 20, *args: str) -> set[str]:
    """Run crash_writer.py (extra `args` go to it), SIGKILL it after `kill_after_acks` acks."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(db), str(seed), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, cwd=REPO,
    )
    acked: set[str] = set()
    acks = 0
    enough = threading.Event()

    def reader() -> None:
        nonlocal acks
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode()
            if not line.endswith("\n"):
                break  # a partial line written as it died: that request's ack never completed
            if line.startswith("ACK "):
                acked.update(line.split()[1:])
                acks += 1
                if acks >= kill_after_acks:
                    enough.set()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    assert enough.wait(timeout), proc.stderr.read().decode() if proc.poll() is not None else "no acks in time"
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    t.join(10)
    assert proc.returncode == -signal.SIGKILL
    return acked


def test_kill_9_mid_load_keeps_every_acked_span_once(tmp_path: Path) -> None:
    db = tmp_path / "crash.duckdb"
    acked: set[str] = set()
    replayed = []
    for seed, kill_after in enumerate([40, 5, 120, 15]):
        acked |= _run_and_kill(db, seed, kill_after)
        # A fresh store on the crashed files after each kill, as a restarted server would be.
        store = SpanStore(Settings(db=db))
        store.start()
        try:
            assert store.wait_loaded(20)
            replayed.append(store.stats().replayed_records)
            with store.read() as cur:
                dupes = cur.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM spans GROUP BY project, trace_id, span_id HAVING count(*) > 1)"
                ).fetchone()[0]
                per_trace = dict(cur.execute("SELECT trace_id, count(*) FROM spans GROUP BY trace_id").fetchall())
                runs = dict(
                    cur.execute("SELECT trace_id, count(*) FROM runs GROUP BY trace_id HAVING count(*) > 1").fetchall()
                )
                run_counts = dict(cur.execute("SELECT trace_id, span_count FROM runs").fetchall())
        finally:
            store.stop()
        assert dupes == 0
        missing = [tid for tid in acked if per_trace.get(tid) != SPANS_PER_TRACE]
        assert not missing, f"{len(missing)} acknowledged traces incomplete after kill #{seed + 1}"
        assert runs == {}  # one runs row per trace, never two
        assert all(run_counts[tid] == SPANS_PER_TRACE for tid in acked)  # runs agree with the spans
    assert len(acked) > 100
    print("records replayed after each kill:", replayed)
    assert sum(replayed) > 0  # some kills did land while acknowledged records were not loaded yet
