"""A worker process started with `--endpoint` traces each task's run to a real steplens ingest server:
the run span carries the task's id, how long it was queued and which run of the task it is, so a
task's trace is found from its id and a trace tells which task it ran."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from kernel.tasks import TaskQueue, TaskStatus
from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tests.support.readme import ROOT, fetch_trace
from tracer import conventions as c


def test_task_run_span_carries_task_id_queued_time_and_attempt(ingest_server, tmp_path: Path) -> None:  # noqa: F811
    queue = TaskQueue(tmp_path / "tasks.sqlite")
    task_id = queue.submit("tests.kernel.tasks.task_agents:slow", "where is 1001?", user_id="alice")
    time.sleep(0.3)  # queued for a measurable while before any worker exists
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TASKS_SLOW_S": "0.05"}
    out = subprocess.run([sys.executable, "-m", "steplens.cli", "tasks", "worker", "--db", str(queue.store.path),
                          "--drain", "--poll", "0.05", "--endpoint", ingest_server.http_url],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr

    task = queue.status(task_id)
    assert task.status == TaskStatus.SUCCEEDED and task.result is not None
    trace_id = task.result.trace_id
    assert trace_id is not None and len(trace_id) == 32
    assert ingest_server.store.wait_loaded(30)
    trace = fetch_trace(ingest_server.http_url, trace_id)
    [run] = [s for s in trace["spans"] if s["name"] == "invoke_agent slow"]
    attrs = run["attributes"]
    assert attrs[c.TASK_ID] == task_id and attrs[c.TASK_ATTEMPT] == 1
    assert 0.3 <= attrs[c.TASK_QUEUED_S] == task.queued_s
    assert attrs[c.ENDUSER_ID] == "alice"
    assert trace["run"]["stop_reason"] == "finish"
    assert "execute_tool wait_for_the_warehouse" in [s["name"] for s in trace["spans"]]
