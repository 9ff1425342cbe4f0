"""`steplens tasks` as a user runs it, each command its own process: submit prints a task id at
once, status/list/result answer while it waits (result exit 1: no result yet), cancel of a queued
task stops it from ever starting, `worker --drain` runs the rest, result prints the run's outcome
(exit 0). A missing task database is an error naming the file, and creates nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.readme import ROOT

QUICK = "tests.kernel.tasks.task_agents:quick"


def steplens(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "steplens.cli", "tasks", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_tasks_cli_end_to_end(tmp_path: Path) -> None:
    db = str(tmp_path / "q" / "tasks.sqlite")
    missing = steplens("status", "task_x", "--db", db, cwd=tmp_path)
    assert missing.returncode == 2 and "no task database at" in missing.stdout and "tasks.sqlite" in missing.stdout
    assert not Path(db).exists()  # a reading command never creates it
    assert steplens("worker", "--db", db, cwd=tmp_path).returncode == 2 and not Path(db).exists()

    sub = steplens("submit", QUICK, "say done", "--db", db, "--idempotency-key", "k1", cwd=tmp_path)
    assert sub.returncode == 0, sub.stderr
    task_id = sub.stdout.strip()
    assert task_id.startswith("task_")
    again = steplens("submit", QUICK, "say done", "--db", db, "--idempotency-key", "k1", cwd=tmp_path)
    assert again.stdout.splitlines()[0] == task_id and "submitted before" in again.stdout
    other = steplens("submit", QUICK, "never mind", "--db", db, cwd=tmp_path).stdout.strip()

    status = steplens("status", task_id, "--db", db, cwd=tmp_path)
    assert status.returncode == 0 and "queued" in status.stdout and "say done" in status.stdout
    early = steplens("result", task_id, "--db", db, cwd=tmp_path)
    assert early.returncode == 1 and "still queued" in early.stdout
    cancel = steplens("cancel", other, "--db", db, "--reason", "changed my mind", cwd=tmp_path)
    assert cancel.returncode == 0 and "never started" in cancel.stdout
    bad = steplens("submit", QUICK, "x", "--db", db, "--webhook", "ftp://nowhere", cwd=tmp_path)
    assert bad.returncode == 2 and "http(s)" in bad.stdout

    work = steplens("worker", "--db", db, "--drain", "--poll", "0.05", cwd=tmp_path)
    assert work.returncode == 0, work.stdout + work.stderr
    assert f"ended             {task_id} succeeded" in work.stdout
    assert other not in work.stdout  # the cancelled task never ran

    result = steplens("result", task_id, "--db", db, cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    body = json.loads(result.stdout)
    assert body["status"] == "succeeded" and body["result"]["answer"] == "done"
    assert body["result"]["stop_reason"] == "finish"
    cancelled = steplens("result", other, "--db", db, cwd=tmp_path)
    assert cancelled.returncode == 1 and json.loads(cancelled.stdout)["status"] == "cancelled"
    listed = steplens("list", "--db", db, cwd=tmp_path)
    assert "1 succeeded" in listed.stdout and "1 cancelled" in listed.stdout
    assert task_id in listed.stdout and other in listed.stdout
    assert steplens("list", "--db", db, "--status", "bogus", cwd=tmp_path).returncode == 2
    late = steplens("cancel", task_id, "--db", db, cwd=tmp_path)
    assert late.returncode == 1 and "already ended (succeeded)" in late.stdout
