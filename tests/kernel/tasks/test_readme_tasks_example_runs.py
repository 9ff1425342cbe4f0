"""The README's "Async tasks" snippet really runs: executed as a separate Python process in a scratch
directory (which receives its tasks.sqlite), it prints `queued` at submit, then the succeeded task's
answer and trace id; that trace reaches a real steplens server with the task's id on its run span.
EXAMPLE is read from README.md; only the endpoint is pointed at the test's server."""

from __future__ import annotations

from kernel.tasks import TaskQueue, TaskStatus
from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tests.support.readme import ROOT, fetch_trace, python_blocks, run_example
from tracer import conventions as c


def test_readme_tasks_example_runs_and_its_run_carries_the_task_id(ingest_server, tmp_path) -> None:  # noqa: F811
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    out = run_example(python_blocks("Async tasks")[0], ingest_server.http_url, cwd=tmp_path, env=env)
    submitted, ended = out.stdout.strip().splitlines()
    assert submitted == "queued"
    status, answer, trace_id = ended.rsplit(" ", 1)[0].split(" ", 1) + [ended.rsplit(" ", 1)[1]]
    assert (status, answer) == ("succeeded", "21 °C and sunny") and len(trace_id) == 32

    [task] = TaskQueue(tmp_path / "tasks.sqlite").list()
    assert task.status == TaskStatus.SUCCEEDED and task.idempotency_key == "paris-1"
    assert ingest_server.store.wait_loaded(30)
    trace = fetch_trace(ingest_server.http_url, trace_id)
    [run] = [s for s in trace["spans"] if s["name"] == "invoke_agent weather"]
    assert run["attributes"][c.TASK_ID] == task.task_id and run["attributes"][c.TASK_ATTEMPT] == 1
